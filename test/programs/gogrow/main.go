// Go's own heap grows while the C heap holds a known count: 500 blocks of 100 bytes from
// C.malloc (cgo: the program loads libc, so LD_PRELOAD reaches it), kept, then 40 steps of
// 1,000 Go slices of 1 KiB, 50 ms apart, kept on the Go heap that Go's runtime maps itself.
// Prints the count of slices kept.  test/t_go_heap.sh.
package main

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

const cBlocks = 500

func main() {
	blocks := make([]unsafe.Pointer, 0, cBlocks)
	for i := 0; i < cBlocks; i++ {
		blocks = append(blocks, C.malloc(100))
	}
	keep := [][]byte{}
	for i := 0; i < 40; i++ {
		for j := 0; j < 1000; j++ {
			b := make([]byte, 1024)
			b[0] = byte(j)
			keep = append(keep, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println(len(keep), len(blocks))
}
