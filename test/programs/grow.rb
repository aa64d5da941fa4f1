# Keeps 100 strings of 1000 bytes per turn (their buffers: malloc'd, 1001 bytes each) and
# calls GC.count once per turn (rb_gc_count: the epoch function).  Prints how many it kept and
# ObjectSpace's size of one such string less its slot, the bytes of its buffer.
require 'objspace'
keep = []
Integer(ARGV[0] || 200).times do
  GC.count
  100.times { keep << ("x" * 1000) }
end
puts "#{keep.size} #{ObjectSpace.memsize_of(keep[0]) - GC::INTERNAL_CONSTANTS[:RVALUE_SIZE]}"
