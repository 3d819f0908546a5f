package algo_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func TestParseQuota(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	for _, c := range []struct {
		in   string
		want algo.Quota
	}{
		{"100/s", algo.Quota{Limit: 100, Window: time.Second}},
		{"100/sec", algo.Quota{Limit: 100, Window: time.Second}},
		{"100/second", algo.Quota{Limit: 100, Window: time.Second}},
		{"100/seconds", algo.Quota{Limit: 100, Window: time.Second}},
		{"100/m", algo.Quota{Limit: 100, Window: time.Minute}},
		{"100/min", algo.Quota{Limit: 100, Window: time.Minute}},
		{"100/minute", algo.Quota{Limit: 100, Window: time.Minute}},
		{"100/h", algo.Quota{Limit: 100, Window: time.Hour}},
		{"100/hour", algo.Quota{Limit: 100, Window: time.Hour}},
		{"100/d", algo.Quota{Limit: 100, Window: day}},
		{"100/day", algo.Quota{Limit: 100, Window: day}},
		{"100/10s", algo.Quota{Limit: 100, Window: 10 * time.Second}},
		{"100/500ms", algo.Quota{Limit: 100, Window: 500 * time.Millisecond}},
		{"100/2d", algo.Quota{Limit: 100, Window: 2 * day}},
		{"100/1m30s", algo.Quota{Limit: 100, Window: 90 * time.Second}},
		{"100/1.5h", algo.Quota{Limit: 100, Window: 90 * time.Minute}},
		{"100/250µs", algo.Quota{Limit: 100, Window: 250 * time.Microsecond}},
		{"100 per minute", algo.Quota{Limit: 100, Window: time.Minute}},
		{"100 per 10s", algo.Quota{Limit: 100, Window: 10 * time.Second}},
		{"100 PER 10 Seconds", algo.Quota{Limit: 100, Window: 10 * time.Second}},
		{"100-S", algo.Quota{Limit: 100, Window: time.Second}},
		{"100-M", algo.Quota{Limit: 100, Window: time.Minute}},
		{"100-H", algo.Quota{Limit: 100, Window: time.Hour}},
		{"100-D", algo.Quota{Limit: 100, Window: day}},
		{" 5/s\n", algo.Quota{Limit: 5, Window: time.Second}},
		{"9007199254740992/d", algo.Quota{Limit: 1 << 53, Window: day}},
		{"1/1µs", algo.Quota{Limit: 1, Window: time.Microsecond}},
	} {
		got, err := algo.ParseQuota(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseQuota(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestParseQuotaErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", " ", "100", "100/", "/s", "s", "0/s", "-1/s", "+1/s", "1e3/s", "1.5/s", "100/0s", "100/0",
		"100/-5s", "100/+5s", "100/10", "100/fortnight", "100/s junk", "100/10s!", "100//s", "100 / s",
		"100 per", "100 per minute please", "100perminute", "100-", "100-X", "100/ s",
		"9007199254740993/s", "99999999999999999999/s", "100/99999999999999999999s", "100/106752d",
		"100/32y", "100/11575d", "100/1ns", "100/1500ns", "100/ss", "100/mss",
	} {
		q, err := algo.ParseQuota(in)
		if !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("ParseQuota(%q) = %v, %v; want an error wrapping ErrInvalidConfig", in, q, err)
			continue
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) {
			t.Errorf("ParseQuota(%q): %v does not quote the input", in, err)
		}
	}
}

// TestQuotaStringRoundTrip: String writes what ParseQuota reads back, for units, whole
// days and any other whole-µs window.
func TestQuotaStringRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		q    algo.Quota
		want string
	}{
		{algo.Quota{Limit: 100, Window: time.Second}, "100/s"},
		{algo.Quota{Limit: 100, Window: time.Minute}, "100/m"},
		{algo.Quota{Limit: 100, Window: time.Hour}, "100/h"},
		{algo.Quota{Limit: 100, Window: 24 * time.Hour}, "100/d"},
		{algo.Quota{Limit: 7, Window: 72 * time.Hour}, "7/3d"},
		{algo.Quota{Limit: 100, Window: 10 * time.Second}, "100/10s"},
		{algo.Quota{Limit: 1, Window: 90 * time.Second}, "1/1m30s"},
		{algo.Quota{Limit: 3, Window: 1500 * time.Microsecond}, "3/1.5ms"},
		{algo.Quota{Limit: 3, Window: 25 * time.Hour}, "3/25h0m0s"},
	} {
		if got := c.q.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.q, got, c.want)
		}
		if back, err := algo.ParseQuota(c.q.String()); err != nil || back != c.q {
			t.Errorf("ParseQuota(%q) = %v, %v; want %#v back", c.q.String(), back, err, c.q)
		}
	}
}

// FuzzParseQuota: ParseQuota never panics, accepts only quotas every window algorithm
// takes, and reads String's output back to the same Quota.
func FuzzParseQuota(f *testing.F) {
	for _, s := range []string{"100/s", "100/10s", "100 per minute", "100-M", "1/1m30s", "5/1.5ms", "7/3d", "100/µs", "0/s", "1/0s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := algo.ParseQuota(s)
		if err != nil {
			if !errors.Is(err, algo.ErrInvalidConfig) {
				t.Fatalf("ParseQuota(%q): %v does not wrap ErrInvalidConfig", s, err)
			}
			return
		}
		if err := (algo.FixedWindow{Limit: q.Limit, Window: q.Window}).Validate(); err != nil {
			t.Fatalf("ParseQuota(%q) = %v, which a FixedWindow refuses: %v", s, q, err)
		}
		if back, err := algo.ParseQuota(q.String()); err != nil || back != q {
			t.Fatalf("ParseQuota(%q) = %#v, written %q, read back as %#v, %v", s, q, q.String(), back, err)
		}
	})
}

// TestFromQuota: every algorithm made from a quota states that quota back (the buckets'
// window within a nanosecond: Quota rounds Limit/Rate up), and the errors name the input.
func TestFromQuota(t *testing.T) {
	t.Parallel()
	names := []string{"fixed-window", "sliding-log", "sliding-counter", "token-bucket", "leaky-bucket", "gcra", "smooth-bursty"}
	for _, s := range []string{"100/s", "100/min", "1/h", "3/d", "7/10s", "1000/500ms", "60/1m30s", "5/7µs"} {
		q, err := algo.ParseQuota(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			a, err := algo.FromQuota(name, q)
			if err != nil {
				if name == "gcra" && s == "5/7µs" { // above GCRA's 1e6 per second
					if !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), "5/7µs") {
						t.Errorf("FromQuota(gcra, %v): %v", q, err)
					}
					continue
				}
				t.Errorf("FromQuota(%q, %v): %v", name, q, err)
				continue
			}
			if a.Name() != name {
				t.Errorf("FromQuota(%q, %v) made %v", name, q, a)
			}
			got, _ := algo.QuotaOf(a)
			if d := got.Window - q.Window; got.Limit != q.Limit || d < 0 || d > 1 {
				t.Errorf("FromQuota(%q, %v) = %v, whose quota is %#v", name, q, a, got)
			}
		}
	}
	for _, c := range []struct {
		name string
		q    algo.Quota
	}{
		{"smooth-warmup", algo.Quota{Limit: 1, Window: time.Second}},
		{"no-such", algo.Quota{Limit: 1, Window: time.Second}},
		{"gcra", algo.Quota{}},
		{"fixed-window", algo.Quota{Limit: 1, Window: time.Nanosecond}},
	} {
		if a, err := algo.FromQuota(c.name, c.q); !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("FromQuota(%q, %#v) = %v, %v; want an error wrapping ErrInvalidConfig naming it", c.name, c.q, a, err)
		}
	}
}

// A rate string as ulule/limiter and most configs write it, made into an algorithm.
func ExampleParseQuota() {
	for _, s := range []string{"100/min", "100 per 10s", "100-H", "100/fortnight"} {
		q, err := algo.ParseQuota(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		a, _ := algo.FromQuota("gcra", q)
		fmt.Printf("%-12q %v: %v\n", s, q, a)
	}
	// Output:
	// "100/min"    100/m: gcra(rate=1.6666666666666667/s, burst=100)
	// "100 per 10s" 100/10s: gcra(rate=10/s, burst=100)
	// "100-H"      100/h: gcra(rate=0.027777777777777776/s, burst=100)
	// limiter: invalid config: rate "100/fortnight": unknown period "fortnight" (want a limit and a period, such as "100/s", "100/10s", "100 per minute" or "100-M")
}
