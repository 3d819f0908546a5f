package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slotCount is the number of Redis Cluster hash slots.
const slotCount = 16384

// Cluster is a throw-away Redis Cluster of masters only (no replicas), each a [Server] in
// cluster mode on 127.0.0.1.
type Cluster struct {
	nodes []*Server
}

// StartCluster starts masters cluster-enabled redis-server processes, splits the 16384 hash
// slots evenly between them, gives each a distinct config epoch, joins them with CLUSTER MEET
// and waits until every node reports cluster_state:ok and knows every epoch. The nodes are
// killed by t.Cleanup. The test is skipped (or failed, see [Require]) when redis-server is
// not installed.
func StartCluster(tb testing.TB, masters int) *Cluster {
	tb.Helper()
	if masters < 1 {
		tb.Fatalf("redistest: a cluster needs at least one master, got %d", masters)
	}
	bin := Require(tb)
	c := &Cluster{}
	for i := 0; i < masters; i++ {
		s, err := startServer(tb, bin, true)
		if err != nil {
			tb.Fatal(err)
		}
		c.nodes = append(c.nodes, s)
	}
	if err := c.form(); err != nil {
		tb.Fatal(err)
	}
	return c
}

// Nodes returns the cluster's nodes; node i owns the i-th of the equal slot ranges.
func (c *Cluster) Nodes() []*Server { return c.nodes }

// Addrs returns the nodes' addresses.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Client returns a cluster client that knows every node, closed by t.Cleanup. Like
// [Server.Client] it enables ContextTimeoutEnabled.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = cc.Close() })
	return cc
}

// form assigns the slots and epochs, joins the nodes and waits for cluster_state:ok and the
// last epoch everywhere.
func (c *Cluster) form() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr(), ContextTimeoutEnabled: true})
		defer clients[i].Close()
	}
	per := slotCount / len(c.nodes)
	for i, cl := range clients {
		lo, hi := i*per, (i+1)*per-1
		if i == len(clients)-1 {
			hi = slotCount - 1
		}
		if err := cl.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("redistest: CLUSTER ADDSLOTSRANGE %d %d on %s: %w", lo, hi, c.nodes[i].Addr(), err)
		}
	}
	// Distinct config epochs before the nodes meet, as redis-cli --cluster create gives
	// them: nodes that all start at epoch 0 settle their collisions by gossip after
	// cluster_state:ok, and a node bumped then may win back a slot a test has just moved.
	for i, cl := range clients {
		if err := cl.Do(ctx, "cluster", "set-config-epoch", i+1).Err(); err != nil {
			return fmt.Errorf("redistest: CLUSTER SET-CONFIG-EPOCH %d on %s: %w", i+1, c.nodes[i].Addr(), err)
		}
	}
	for _, n := range c.nodes[1:] {
		if err := clients[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(n.Port())).Err(); err != nil {
			return fmt.Errorf("redistest: CLUSTER MEET %s: %w", n.Addr(), err)
		}
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	want := []string{
		"cluster_state:ok",
		"cluster_slots_assigned:" + strconv.Itoa(slotCount),
		"cluster_known_nodes:" + strconv.Itoa(len(c.nodes)),
		"cluster_current_epoch:" + strconv.Itoa(len(c.nodes)), // every node has heard of the last one's epoch
	}
	for i := 0; i < len(clients); {
		info, err := clients[i].ClusterInfo(ctx).Result()
		if err == nil && containsAll(info, want) {
			i++ // this node is ready; check the next one
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: cluster not ok after %v: node %s says %q (err %v)",
				readyTimeout, c.nodes[i].Addr(), strings.TrimSpace(info), err)
		case <-tick.C:
		}
	}
	return nil
}

func containsAll(info string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(info, w) {
			return false
		}
	}
	return true
}
