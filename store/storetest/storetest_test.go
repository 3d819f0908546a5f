package storetest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

func refFactory(flaw string) Factory {
	return func(_ *testing.T, clk *clockx.Fake) store.Store { return newRefStore(clk, flaw) }
}

func TestRunReference(t *testing.T) {
	t.Parallel()
	Run(t, refFactory(flawNone))
}

func TestDifferentialReference(t *testing.T) {
	t.Parallel()
	Differential(t, refFactory(flawNone), refFactory(flawNone), DiffOptions{Steps: 1000, Seed: 42})
}

func TestDifferentialAdminReference(t *testing.T) {
	t.Parallel()
	Differential(t, refFactory(flawNone), refFactory(flawNone), DiffOptions{Steps: 1000, Seed: 43, Admin: true})
}

// TestDifferentialAdminFindsDifference checks that DiffOptions.Admin catches a store
// whose Peek commits or whose Reset forgets nothing.
func TestDifferentialAdminFindsDifference(t *testing.T) {
	t.Parallel()
	for _, flaw := range []string{flawPeekWrites, flawResetNothing} {
		t.Run(flaw, func(t *testing.T) {
			t.Parallel()
			found := 0
			for i, a := range algo.Samples() {
				if err := diffRun(t, refFactory(flawNone), refFactory(flaw), a, int64(i+1), 1500, true); err != nil {
					found++
				}
			}
			if found < len(algo.Samples())/2 {
				t.Fatalf("a %s store went unnoticed by %d of %d algorithms", flaw, len(algo.Samples())-found, len(algo.Samples()))
			}
		})
	}
}

// TestDifferentialFindsDifference checks that a store that drops refunds or forgets state
// now and then is caught, with a message that locates the difference.
func TestDifferentialFindsDifference(t *testing.T) {
	t.Parallel()
	for _, flaw := range []string{flawLostRefund, flawForgetful} {
		t.Run(flaw, func(t *testing.T) {
			t.Parallel()
			found := 0
			for i, a := range algo.Samples() {
				err := diffRun(t, refFactory(flawNone), refFactory(flaw), a, int64(i+1), 1500, false)
				if err == nil {
					continue
				}
				found++
				msg := err.Error()
				for _, want := range []string{"seed", "differ at step", "a: {Allowed", "b: "} {
					if !strings.Contains(msg, want) {
						t.Errorf("%v: the report does not say %q:\n%s", a, want, msg)
					}
				}
			}
			if found < len(algo.Samples())/2 {
				t.Fatalf("a %s store went unnoticed by %d of %d algorithms", flaw, len(algo.Samples())-found, len(algo.Samples()))
			}
		})
	}
}

// flawEnv names the flaw TestFlawedStore gives its store; unset, that test is skipped.
const flawEnv = "STORETEST_FLAW"

// TestFlawedStore runs one part of the suite against a flawed store. It only runs as a
// child of TestRunFindsFlaws, which expects it to fail.
func TestFlawedStore(t *testing.T) {
	flaw := os.Getenv(flawEnv)
	if flaw == "" {
		t.Skip("runs only as a child of TestRunFindsFlaws")
	}
	Run(t, refFactory(flaw))
}

// TestRunFindsFlaws runs the part of the suite meant to catch each flaw against a store
// that has it, in a child process, and expects that part to fail.
func TestRunFindsFlaws(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, tc := range []struct {
		flaw, part string
	}{
		{flawSharedKeys, "Keys"},
		{flawSharedKeys, "Independence/Keys"},
		{flawSharedSlots, "Independence/Slots"},
		{flawNoClose, "Close"},
		{flawLostRefund, "Scenarios"},
		{flawForgetful, "Properties"},
		{flawForgetful, "Probes"},
		{flawNoValidation, "BadInput"},
		{flawRacy, "Concurrency"},
		{flawIgnoresCtx, "Context"},
		{flawPeekWrites, "Admin/Model"},
		{flawResetNothing, "Admin/Model"},
		{flawResetNothing, "Admin/Slots"},
		{flawPartial, "Multi/Model/mixed"},
		{flawPartial, "Multi/DenialKeepsState/every_algorithm"},
		{flawNoValidation, "Multi/BadInput"},
	} {
		t.Run(tc.flaw+"/"+tc.part, func(t *testing.T) {
			t.Parallel()
			pattern := "^TestFlawedStore$/^" + strings.ReplaceAll(tc.part, "/", "$/^") + "$"
			cmd := exec.Command(os.Args[0], "-test.run="+pattern, "-test.count=1", "-test.timeout=60s")
			cmd.Env = append(os.Environ(), flawEnv+"="+tc.flaw)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite's %s passed against a %s store:\n%s", tc.part, tc.flaw, tail(out))
			}
			if !strings.Contains(string(out), "--- FAIL: TestFlawedStore/"+tc.part) {
				t.Fatalf("the child failed, but not in %s:\n%s", tc.part, tail(out))
			}
		})
	}
}

func tail(b []byte) string {
	const n = 3000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
