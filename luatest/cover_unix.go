//go:build unix

package luatest

import (
	"os"
	"syscall"
	"unsafe"
)

// mapCounters makes the counter file at path, n counters of zero, and maps it
// into memory shared with the file: what the process adds is in the file
// whatever way the process ends. The mapping lasts as long as the process.
func mapCounters(path string, n int) ([]uint64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if n == 0 {
		return nil, nil
	}
	if err := f.Truncate(int64(8 * n)); err != nil {
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 8*n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), n), nil
}
