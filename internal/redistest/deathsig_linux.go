package redistest

import "syscall"

// withParent makes a started redis-server die with the process that started it: a test
// binary killed by a timeout or a signal runs no cleanup, and its servers outlived it.
// (The signal comes when the thread that started the server ends; Go ends no thread of
// its own accord except one locked by a goroutine that exits, which the starting
// goroutine is not.)
func withParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
