package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeRedisServer runs the Makefile's redis-server step (which make test runs first)
// with a PATH holding only the tools it needs and fakes of redis-server and the package
// managers: it installs with the package manager found, and otherwise, or for a Redis
// older than 7, stops with one line saying what to install.
func TestMakeRedisServer(t *testing.T) {
	t.Parallel()
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fakeRedis := func(version string) string {
		return "#!/bin/sh\necho 'Redis server v=" + version + " sha=00000000:0 malloc=libc bits=64 build=0'\n"
	}
	for _, c := range []struct {
		name     string
		tools    map[string]string // fake commands on the PATH
		ok       bool
		stdout   string // contained in stdout
		stderr   string // contained in stderr, which is one line
		installs bool   // redis-server is there afterwards
	}{
		{name: "present", tools: map[string]string{"redis-server": fakeRedis("7.0.15")}, ok: true},
		{name: "valkey", tools: map[string]string{"redis-server": "#!/bin/sh\necho 'Valkey server v=8.0.2 sha=0'\n"}, ok: true},
		{name: "too old", tools: map[string]string{"redis-server": fakeRedis("6.2.14")},
			stderr: "the suite needs Redis 7 or newer, and redis-server is Redis server v=6.2.14: install Redis 7"},
		{name: "no package manager", stderr: "no known package manager (apt-get, dnf, yum, apk, pacman, brew)"},
		{name: "dnf", tools: map[string]string{"dnf": installer("dnf install -y redis", fakeRedis("7.2.4"))},
			ok: true, stdout: "installing redis-server:  dnf install -y redis", installs: true},
		{name: "apk before brew", tools: map[string]string{
			"apk":  installer("apk add --no-cache redis", fakeRedis("7.2.4")),
			"brew": "#!/bin/sh\nexit 3\n",
		}, ok: true, stdout: "apk add --no-cache redis", installs: true},
		{name: "brew", tools: map[string]string{"brew": installer("brew install redis", fakeRedis("8.0.0"))},
			ok: true, stdout: "brew install redis", installs: true},
		{name: "install fails", tools: map[string]string{"pacman": "#!/bin/sh\nexit 1\n"},
			stderr: "could not install redis-server ( pacman -S --noconfirm --needed redis): install Redis 7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bin := t.TempDir()
			for _, tool := range []string{"sh", "id", "sed", "cut", "env", "cat", "chmod"} {
				p, err := exec.LookPath(tool)
				if err != nil {
					t.Skipf("%s is not installed", tool)
				}
				if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
					t.Fatal(err)
				}
			}
			for name, script := range c.tools {
				if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(mk, "--no-print-directory", "-s", "-C", root, "redis-server")
			cmd.Env = []string{"PATH=" + bin, "BIN=" + bin, "HOME=" + t.TempDir()}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ok := err == nil; ok != c.ok {
				t.Fatalf("make redis-server: %v, want success %t\nstdout: %s\nstderr: %s", err, c.ok, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), c.stdout) {
				t.Errorf("stdout %q, want it to contain %q", stdout.String(), c.stdout)
			}
			// One line of ours; make adds its own "make: *** [Makefile:N: redis-server] Error 1".
			var ours []string
			for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				if l != "" && !strings.HasPrefix(l, "make: *** ") {
					ours = append(ours, l)
				}
			}
			if c.stderr != "" && (len(ours) != 1 || !strings.Contains(ours[0], c.stderr)) {
				t.Errorf("stderr %q, want one line containing %q", stderr.String(), c.stderr)
			}
			if _, err := os.Stat(filepath.Join(bin, "redis-server")); c.installs && err != nil {
				t.Errorf("redis-server not installed: %v", err)
			}
		})
	}
}

// installer is a fake package manager that installs redis (a script) into $BIN when it
// is called with args, and fails otherwise.
func installer(args, redis string) string {
	return "#!/bin/sh\n[ \"${0##*/} $*\" = '" + args + "' ] || { echo \"unexpected: $0 $*\" >&2; exit 2; }\n" +
		"cat > \"$BIN/redis-server\" <<'EOF'\n" + redis + "EOF\nchmod +x \"$BIN/redis-server\"\n"
}
