package main

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryFlagDocumented: each flag of ratekitd's usage has a row in docs/rls.md's flags
// table.
func TestEveryFlagDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/rls.md")
	require.NoError(t, err)
	var rows strings.Builder
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| `--") {
			first, _, _ := strings.Cut(line[1:], "|")
			rows.WriteString(first)
		}
	}
	require.NotEmpty(t, rows.String(), "the flags table of docs/rls.md")
	var usage bytes.Buffer
	_, err = parseFlags([]string{"-h"}, &usage)
	require.ErrorIs(t, err, flag.ErrHelp)
	names := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(usage.String(), -1)
	require.NotEmpty(t, names)
	for _, n := range names {
		assert.Regexp(t, "`--"+regexp.QuoteMeta(n[1])+"[` ]", rows.String(), "--%s has no row in docs/rls.md", n[1])
	}
}
