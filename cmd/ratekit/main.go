// Command ratekit shows how each rate-limiting algorithm shapes traffic.
//
//	ratekit sim --algo token-bucket --rate 10 --burst 20 --traffic burst --duration 10s
//
// runs the algorithm on the in-memory store under virtual time and prints, second by
// second, how many requests the traffic offered and how many the algorithm admitted.
// Algorithms: fixed-window, sliding-log, sliding-counter, token-bucket, leaky-bucket, gcra.
// Traffic: steady, burst, spike, ramp.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// errUsage marks errors that are the caller's: exit code 2.
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "ratekit:", unwrapUsage(err))
		return 2
	default:
		fmt.Fprintln(stderr, "ratekit:", err)
		return 1
	}
}

func dispatch(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: missing command (want: sim)", errUsage)
	}
	switch args[0] {
	case "sim":
		return simCommand(args[1:], stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, "usage: ratekit sim --algo NAME [--rate R --burst B --limit L --window W] --traffic steady|burst|spike|ramp --duration D")
		return nil
	default:
		return fmt.Errorf("%w: unknown command %q (want: sim)", errUsage, args[0])
	}
}

// usageError wraps a message as a usage error without repeating the word "usage".
type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == errUsage }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

func unwrapUsage(err error) string {
	var u usageError
	if errors.As(err, &u) {
		return u.msg
	}
	return err.Error()
}
