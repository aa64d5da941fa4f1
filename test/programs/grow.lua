-- Keeps 100 strings of 1000 and 1001 bytes per turn and calls lua_gc once per turn
-- (collectgarbage("isrunning"): the epoch function); with a second argument N, drops what it
-- kept at the end of turn N and collects.  Prints how many it kept and the bytes the Lua
-- state holds by its own books, read after the last turn (two more lua_gc calls).
local keep = {}
local drop = tonumber(arg[2] or -1)
for t = 1, tonumber(arg[1] or 200) do
  collectgarbage("isrunning")
  for i = 1, 100 do keep[#keep + 1] = string.rep("x", 1000 + i % 2) end
  if t == drop then keep = {}; collectgarbage("collect") end
end
print(#keep, string.format("%d", collectgarbage("count") * 1024))
