package main

// presizeStack grows the calling goroutine's stack to 128 KiB at once,
// while the stack is shallow, for the commands whose start-up is their
// latency (oneProc: `warren exec`, `warren sandbox ...`).
//
// A goroutine's stack starts at a few KiB and doubles each time a call
// finds it too small; each doubling copies the stack and walks every
// frame on it to adjust its pointers (runtime.copystack, adjustframe:
// pcvalue tables decoded frame by frame). kong's reflection over the
// command and encoding/json's first look at each type run deep, so a
// `warren exec` grows its main goroutine several times, deep each time,
// a visible share of its CPU (runtime.morestack, docs/benchmarks.md). One
// frame of presizeFrame bytes makes the runtime size the stack for it in
// one step, from main's few frames; the stack then stays (a goroutine's
// stack shrinks only at a collection, and only when it uses a quarter).
//
//go:noinline
func presizeStack() byte {
	var frame [presizeFrame]byte
	return lastByte(frame[:])
}

// presizeFrame is the frame presizeStack takes: with the runtime's guard
// and main's frames below it the stack doubles to 128 KiB. Below the
// compiler's limit for a stack variable (128 KiB), above which frame
// would move to the heap and nothing would grow.
const presizeFrame = 96 << 10

//go:noinline
func lastByte(b []byte) byte { return b[len(b)-1] }
