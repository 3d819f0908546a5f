package luawire_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ratekit/limiter/internal/luawire"
)

// TestComposed: a script follows the composition rule when it starts with the base, whole.
func TestComposed(t *testing.T) {
	if !luawire.Composed(luawire.BaseLua + "local function call() return 1 end\nreturn serve(call)\n") {
		t.Error("the base and a body: not composed")
	}
	for _, src := range []string{"return 1", "-- custom\n" + luawire.BaseLua + "return serve(function() return 1 end)\n", luawire.BaseLua[:len(luawire.BaseLua)/2]} {
		if luawire.Composed(src) {
			t.Errorf("Composed(%.40q...) = true", src)
		}
	}
}

// TestLibrary: the library runs the whole script once, in a function whose return (the
// script's serve) is the function registered under a name that carries the SHA-1 of the
// script; nothing of the script is cut or moved.
func TestLibrary(t *testing.T) {
	src := luawire.BaseLua + "local x = 1\nlocal function call() return x end\nreturn serve(call)\n"
	fn, lib := luawire.Library(src)
	if !strings.HasPrefix(fn, "ratekit_") || !strings.HasPrefix(lib, "#!lua name="+fn+"\n") {
		t.Fatalf("Library = %q, %.40q", fn, lib)
	}
	if !strings.Contains(lib, "local call, call_shared = (function()\n"+src+"\nend)()\n") {
		t.Errorf("the library does not hold the script whole:\n%s", lib)
	}
	if !strings.HasSuffix(lib, "redis.register_function('"+fn+"', call)\n") {
		t.Errorf("library does not register %s:\n%s", fn, lib)
	}
	if other, _ := luawire.Library(src + " "); other == fn {
		t.Error("two sources share a function name")
	}
}

// TestRateLibrary: the same library and function name as Library's, then the quick and
// multi functions, registered after it.
func TestRateLibrary(t *testing.T) {
	src := luawire.BaseLua + "local function call() return {1, 2, 3, 4, 5, 6, 7} end\nreturn serve(call)\n"
	fn, quick, multi, lib := luawire.RateLibrary(src, 1)
	plain, plainLib := luawire.Library(src)
	if fn != plain || quick != fn+luawire.QuickSuffix || multi != fn+luawire.MultiSuffix {
		t.Fatalf("RateLibrary names %q, %q, %q; want %q and it with %q, %q", fn, quick, multi, plain, luawire.QuickSuffix, luawire.MultiSuffix)
	}
	if !strings.HasPrefix(lib, plainLib) {
		t.Errorf("the library does not start as Library's:\n%s", lib)
	}
	q := strings.Index(lib, "redis.register_function('"+quick+"',")
	m := strings.Index(lib, "redis.register_function('"+multi+"',")
	if q < len(plainLib) || m < q {
		t.Errorf("library does not register %s, %s, then %s:\n%s", fn, quick, multi, lib)
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
