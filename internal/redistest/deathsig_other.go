//go:build !linux

package redistest

import "syscall"

// withParent is nil where the kernel cannot tie a child's life to its parent's: there, a
// test binary killed before its cleanups leaves its servers running.
func withParent() *syscall.SysProcAttr { return nil }
