package server

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"time"
)

// Watcher reloads a Service's configuration when its files change. It polls: every
// interval it reads the files again and compares a hash of their names and bytes with the
// last one loaded. Rate limit configs are a few kilobytes, so reading them is cheap, and
// a content hash sees what mtimes and inotify miss or report twice: a file rewritten
// within the same mtime tick, and the symlink swap by which Kubernetes updates a
// ConfigMap (the directory's "..data" link moves; no watched file is written).
type Watcher struct {
	path string
	svc  *Service
	log  *slog.Logger
	sum  [sha256.Size]byte
}

// NewWatcher returns a Watcher of path for svc, which already runs the configuration
// loaded from path now.
func NewWatcher(path string, svc *Service) *Watcher {
	w := &Watcher{path: path, svc: svc, log: svc.log}
	if srcs, err := readSources(path); err == nil {
		w.sum = hashSources(srcs)
	}
	return w
}

// Check reloads the configuration if the files changed since the last load (or the last
// refused change). A file that does not load is refused: the error names the file, the
// line and the field, and the Service keeps the configuration it has. changed reports
// whether the files changed.
func (w *Watcher) Check() (changed bool, err error) {
	srcs, err := readSources(w.path)
	if err != nil {
		// The files cannot be read (a path being replaced, a permission): report each
		// distinct error once, as for a file that does not load.
		sum := sha256.Sum256([]byte("read error\x00" + err.Error()))
		if sum == w.sum {
			return false, nil
		}
		w.sum = sum
		w.svc.metrics.reloadsKO.Add(1)
		return true, err
	}
	sum := hashSources(srcs)
	if sum == w.sum {
		return false, nil
	}
	w.sum = sum // a refused change is reported once, not at every poll
	cfg, err := parseSources(srcs)
	if err != nil {
		w.svc.metrics.reloadsKO.Add(1)
		return true, err
	}
	w.svc.SetConfig(cfg)
	w.svc.metrics.reloadsOK.Add(1)
	return true, nil
}

// Run checks every interval until ctx ends, logging each reload and each refusal.
func (w *Watcher) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := w.Check()
		switch {
		case err != nil:
			w.log.Error("config refused; keeping the running one", slog.String("path", w.path), slog.Any("error", err))
		case changed:
			w.log.Info("config reloaded", slog.String("path", w.path), slog.Any("domains", w.svc.Config().Domains()))
			LogIgnored(w.log, w.svc.Config())
		}
	}
}

func hashSources(srcs []source) [sha256.Size]byte {
	h := sha256.New()
	for _, s := range srcs {
		h.Write([]byte(s.name))
		h.Write([]byte{0})
		h.Write(s.data)
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// LogIgnored logs a warning for each file of cfg whose later YAML documents were ignored
// (Config.Ignored).
func LogIgnored(log *slog.Logger, cfg *Config) {
	for _, msg := range cfg.ignored {
		log.Warn("config: " + msg)
	}
}
