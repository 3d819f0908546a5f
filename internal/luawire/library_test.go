package luawire_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ratekit/limiter/internal/luawire"
)

// TestLibrary: the part before the last per-call line loads once, the rest is the
// function's body; a script without the line has no library.
func TestLibrary(t *testing.T) {
	if fn, lib := luawire.Library("return 1"); fn != "" || lib != "" {
		t.Errorf("Library of a script without a per-call line = %q, %q; want none", fn, lib)
	}
	// A composite: each rule's source carries the line inside its function; the driver's
	// line, the last, splits the library.
	rule := "local x = 1\n" + luawire.PerCall + " rule\nreturn x\n"
	src := "local rule = function(KEYS, ARGV)\n" + rule + "end\nlocal y = 2\n" + luawire.PerCall + " driver\nreturn rule()\n"
	fn, lib := luawire.Library(src)
	if !strings.HasPrefix(fn, "ratekit_") || !strings.HasPrefix(lib, "#!lua name="+fn+"\n") {
		t.Fatalf("Library = %q, %.40q", fn, lib)
	}
	load, call, ok := strings.Cut(lib, "local function call(keys, args)\n")
	if !ok || !strings.Contains(load, "local y = 2") || !strings.Contains(load, "-- ---- per call: rule") ||
		!strings.HasPrefix(call, "KEYS, ARGV = keys, args\n-- ---- per call: driver\nreturn rule()") {
		t.Errorf("library split at the wrong line:\n%s", lib)
	}
	if !strings.HasSuffix(lib, "redis.register_function('"+fn+"', call)\n") {
		t.Errorf("library does not register %s:\n%s", fn, lib)
	}
	if other, _ := luawire.Library(src + " "); other == fn {
		t.Error("two sources share a function name")
	}
}

// TestQuickLibrary: the same library and function name as Library's, plus the quick
// function, registered after it; none for a script without a per-call line.
func TestQuickLibrary(t *testing.T) {
	if fn, quick, lib := luawire.QuickLibrary("return 1", 1); fn != "" || quick != "" || lib != "" {
		t.Errorf("QuickLibrary of a script without a per-call line = %q, %q, %q; want none", fn, quick, lib)
	}
	src := "local x = 1\n" + luawire.PerCall + " call\nreturn {x}\n"
	fn, quick, lib := luawire.QuickLibrary(src, 1)
	if plain, _ := luawire.Library(src); fn != plain || quick != fn+luawire.QuickSuffix {
		t.Fatalf("QuickLibrary names %q, %q; want %q and it with %q", fn, quick, plain, luawire.QuickSuffix)
	}
	full := strings.Index(lib, "redis.register_function('"+fn+"',")
	q := strings.Index(lib, "redis.register_function('"+quick+"',")
	m := strings.Index(lib, "redis.register_function('"+fn+luawire.MultiSuffix+"',")
	if full < 0 || q < full || m < q || !strings.Contains(lib[q:m], "quick, multi_now = true, nil") {
		t.Errorf("library does not register %s, %s, then %s%s:\n%s", fn, quick, fn, luawire.MultiSuffix, lib)
	}
}

// TestSplitMulti: a multi reply splits into its calls' decisions and errors, and anything
// else is a *ReplyError, never a panic.
func TestSplitMulti(t *testing.T) {
	d := "D" + strings.Repeat("\x00", 56)
	e := func(msg string) string { return "E" + string([]byte{byte(len(msg)), 0, 0, 0}) + msg }
	var got []string
	each := func(i int, packed, errMsg string) { got = append(got, fmt.Sprintf("%d %d %s", i, len(packed), errMsg)) }
	if err := luawire.SplitMulti(d+e("WRONGTYPE x")+d, 3, each); err != nil || strings.Join(got, ",") != "0 57 ,1 0 WRONGTYPE x,2 57 " {
		t.Errorf("SplitMulti = %q, %v", got, err)
	}
	for _, bad := range []struct {
		reply string
		n     int
	}{
		{d, 2}, {d + d, 1}, {d[:56], 1}, {"E\xff\x00\x00\x00x", 1}, {"E\x01", 1}, {"X", 1}, {"", 1},
	} {
		var re *luawire.ReplyError
		if err := luawire.SplitMulti(bad.reply, bad.n, func(int, string, string) {}); !errors.As(err, &re) {
			t.Errorf("SplitMulti(%q, %d) = %v, want a *ReplyError", bad.reply, bad.n, err)
		}
	}
}

// TestNowArgs: ARGV[2] as the scripts read it.
func TestNowArgs(t *testing.T) {
	if got := luawire.Now(luawire.ServerTime); got != "" {
		t.Errorf("Now(ServerTime) = %#v, want \"\"", got)
	}
	if got := luawire.Now(42); got != int64(42) {
		t.Errorf("Now(42) = %#v", got)
	}
	if got := luawire.PaddedNow(42, 0); got != int64(42) {
		t.Errorf("PaddedNow(42, 0) = %#v, want 42", got)
	}
	if got := luawire.PaddedNow(-42, 7); got != "-42 7" {
		t.Errorf("PaddedNow(-42, 7) = %#v, want \"-42 7\"", got)
	}
}
