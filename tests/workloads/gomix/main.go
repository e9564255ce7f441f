// SPDX-License-Identifier: Apache-2.0
// Go stacks frame pointers get wrong (tests/daemon/unwind/unwind_go.sh): mixA, a leaf without a frame of its
// own, whose caller callerA a frame-pointer walk skips; crypto/sha256's block, assembly that
// uses rbp as a plain register, where a frame-pointer walk ends. Runs for argv[1] seconds.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func mixA(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

//go:noinline
func callerA(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += mixA(uint64(i) + s)
	}
	return s
}

//go:noinline
func hashB(buf []byte, n int) byte {
	var h [32]byte
	for i := 0; i < n; i++ {
		h = sha256.Sum256(buf)
		buf[0] ^= h[0]
	}
	return h[0]
}

//go:noinline
func work(d time.Duration) {
	buf := make([]byte, 4096)
	end := time.Now().Add(d)
	var s uint64
	for time.Now().Before(end) {
		s += callerA(200000)
		s += uint64(hashB(buf, 50))
	}
	fmt.Println(s)
}

func main() {
	secs := 3.0
	if len(os.Args) > 1 {
		secs, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	work(time.Duration(secs * float64(time.Second)))
}
