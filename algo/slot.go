package algo

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// slotCache interns the slot names of one window algorithm ("fw:1000000"), so Slot does
// not build a string on every call: stores call it on their hot path. Reads are one atomic
// load and a map lookup; a miss copies the map (windows in use are few).
type slotCache struct {
	prefix string
	mu     sync.Mutex
	m      atomic.Pointer[map[int64]string]
}

// maxCachedSlots bounds the cache against a program that creates windows without end.
const maxCachedSlots = 1024

func (c *slotCache) get(window int64) string {
	if m := c.m.Load(); m != nil {
		if s, ok := (*m)[window]; ok {
			return s
		}
	}
	s := c.prefix + strconv.FormatInt(window, 10)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil && len(*old) >= maxCachedSlots {
		return s
	}
	next := make(map[int64]string, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[window] = s
	c.m.Store(&next)
	return s
}

func lenOf(m *map[int64]string) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
