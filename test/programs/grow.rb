# Keeps 100 strings of 1000 bytes per turn (their buffers: malloc'd, 1001 bytes each) and
# calls GC.count once per turn (rb_gc_count: the epoch function).  With a second argument N,
# drops what it kept at the end of turn N and collects (GC.start).  Prints how many it kept
# and ObjectSpace's size of one such string less its slot, the bytes of its buffer.
require 'objspace'
keep = []
drop = ARGV[1] && Integer(ARGV[1])
Integer(ARGV[0] || 200).times do |turn|
  GC.count
  100.times { keep << ("x" * 1000) }
  if turn + 1 == drop
    keep = []
    GC.start
  end
end
puts "#{keep.size} #{ObjectSpace.memsize_of(keep[0]) - GC::INTERNAL_CONSTANTS[:RVALUE_SIZE]}"
