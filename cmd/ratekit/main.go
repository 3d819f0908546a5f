package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Exit statuses.
const (
	exitOK          = 0
	exitFailure     = 1   // the command could not do its work (a file, a Redis)
	exitUsage       = 2   // the caller's mistake: a flag, a command, an algorithm
	exitInterrupted = 130 // stopped by Ctrl-C (128 + SIGINT), after printing what it had
)

// errUsage marks errors that are the caller's: exit status 2.
var errUsage = errors.New("usage")

// errInterrupted marks a command stopped by a signal after printing its partial result.
var errInterrupted = errors.New("interrupted")

// usage is the text of "ratekit help".
var usage = `usage: ratekit <command> [flags]

commands:
  sim    show how an algorithm shapes a traffic pattern (in-memory store, virtual time)
  bench  measure decisions/s and latency against the in-memory store or a Redis
  help   print this text

ratekit sim [--algo NAME | --compare NAME,NAME,...] [--quota 100/min | --rate R [--burst B]
            [--limit L] [--window W]] [--warmup D] [--traffic steady|burst|spike|ramp] [--duration D]
            [--interval D] [--mode allow|wait] [--max-wait D] [--svg FILE]
ratekit sim --algo adaptive-aimd|adaptive-gradient [--capacity C] [--latency D] [--load X]
            [--duration D] [--interval D] [--drop-at D] [--drop-to C] [--timeout D]
            [--compare] [--small N] [--big N] [--svg FILE]
ratekit bench [--store memory|redis://[user:pass@]host:port[/db]|redis+cluster://host:port,...]
              [--cluster host:port,host:port,...] [--algo NAME] [--quota 100/min | --rate R
              [--burst B] [--limit L] [--window W]] [--warmup D] [--goroutines N] [--duration D] [--keys N]

algorithms: ` + strings.Join(algorithmNames[:5], ", ") + `,
            ` + strings.Join(algorithmNames[5:], ", ") + `;
            ` + strings.Join(adaptiveNames, ", ") + ` (sim only: concurrency limits)
Run "ratekit sim -h" or "ratekit bench -h" for every flag and its default.
`

func main() {
	redis.SetLogger(discardLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit status. Errors are printed on
// stderr as one line starting with "ratekit: ".
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "ratekit:", oneLine(unwrapUsage(err)))
		return exitUsage
	default:
		fmt.Fprintln(stderr, "ratekit:", oneLine(err.Error()))
		return exitFailure
	}
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("missing command (want sim, bench or help; run \"ratekit help\")")
	}
	switch args[0] {
	case "sim":
		return simCommand(args[1:], stdout)
	case "bench":
		return benchCommand(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		return usagef("unknown command %q (want sim, bench or help)", args[0])
	}
}

// parseFlags parses args with fs, whose output it discards, so that a bad flag makes one
// line: a usage error naming the command. -h prints the flags on stdout and returns
// flag.ErrHelp. Positional arguments are refused.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "usage: %s [flags]\n\nflags:\n", fs.Name())
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return err
		}
		return usagef("%s: %v (run \"%s -h\")", strings.TrimPrefix(fs.Name(), "ratekit "), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q (flags start with --)", strings.TrimPrefix(fs.Name(), "ratekit "), fs.Arg(0))
	}
	return nil
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

// oneLine keeps an error message on one line, whatever the error wrapped.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
