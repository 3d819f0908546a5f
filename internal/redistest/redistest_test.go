package redistest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ratekit/limiter/internal/redistest"
)

func TestServerRestartEmptiesScriptCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.Start(t)
	c := s.Client(t)
	sha, err := c.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()

	s.Restart()
	if got, want := s.Addr(), addr; got != want {
		t.Fatalf("Addr after Restart = %s, want %s", got, want)
	}
	exists, err := c.ScriptExists(ctx, sha).Result()
	if err != nil {
		t.Fatalf("ScriptExists after Restart: %v", err)
	}
	if exists[0] {
		t.Error("script still cached after Restart")
	}
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS k after Restart = %d, %v; want 0, nil", n, err)
	}

	s.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Error("PING succeeded after Kill")
	}
	s.Kill() // a second Kill is a no-op
}

func TestClusterSpreadsKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	for i := 0; i < 50; i++ {
		k := fmt.Sprintf("key-%d", i)
		if err := c.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	// Every node owns a third of the slots, so 50 keys land on all three.
	for _, n := range cl.Nodes() {
		size, err := n.Client(t).DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if size == 0 {
			t.Errorf("node %s holds no key", n.Addr())
		}
	}
}

// TestClusterEpochsSettled checks that a cluster is handed over with distinct config epochs
// that every node knows: a node still settling an epoch collision by gossip could take back a
// slot a test moves by hand (CLUSTER SETSLOT), and answer MOVED to its new owner.
func TestClusterEpochsSettled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	seen := map[string]bool{}
	for _, n := range cl.Nodes() {
		info, err := n.Client(t).ClusterInfo(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		mine, current := infoField(info, "cluster_my_epoch"), infoField(info, "cluster_current_epoch")
		if mine == "" || mine == "0" || seen[mine] {
			t.Errorf("node %s: cluster_my_epoch %q, want a distinct epoch > 0 (seen %v)", n.Addr(), mine, seen)
		}
		seen[mine] = true
		if current != "3" {
			t.Errorf("node %s: cluster_current_epoch %q, want 3", n.Addr(), current)
		}
	}
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
