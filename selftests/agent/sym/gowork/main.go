// gowork: a CPU-busy Go program for the symbolizer tests (suite 11). It
// spends its time in a few named functions, one of them inlined into its
// caller, on several goroutines, and measures its own shares: at the end
// it prints "share NAME PERCENT" for each worker, counted in loop rounds.
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var sink uint64

// mix is small enough for the compiler to inline into its callers.
func mix(x uint64) uint64 {
	x ^= x >> 13
	x *= 0x9e3779b97f4a7c15
	return x ^ (x >> 29)
}

//go:noinline
func hashLoop(n int) uint64 {
	var h uint64 = 1
	for i := 0; i < n; i++ {
		h = mix(h + uint64(i))
	}
	return h
}

//go:noinline
func sumSquares(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += uint64(i) * uint64(i) % 7919
	}
	return s
}

//go:noinline
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

//go:noinline
func workerHash(stop *int32, rounds *uint64) {
	for atomic.LoadInt32(stop) == 0 {
		sink += hashLoop(20000)
		atomic.AddUint64(rounds, 1)
	}
}

//go:noinline
func workerSquares(stop *int32, rounds *uint64) {
	for atomic.LoadInt32(stop) == 0 {
		sink += sumSquares(20000)
		atomic.AddUint64(rounds, 1)
	}
}

//go:noinline
func workerFib(stop *int32, rounds *uint64) {
	for atomic.LoadInt32(stop) == 0 {
		sink += uint64(fib(20))
		atomic.AddUint64(rounds, 1)
	}
}

func main() {
	secs := 2.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	var stop int32
	var wg sync.WaitGroup
	names := []string{"main.workerHash", "main.workerSquares", "main.workerFib"}
	funcs := []func(*int32, *uint64){workerHash, workerSquares, workerFib}
	rounds := make([]uint64, len(funcs))
	for i := range funcs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			funcs[i](&stop, &rounds[i])
		}(i)
	}
	time.Sleep(time.Duration(secs * float64(time.Second)))
	atomic.StoreInt32(&stop, 1)
	wg.Wait()
	for i, n := range names {
		fmt.Printf("rounds %s %d\n", n, rounds[i])
	}
}
