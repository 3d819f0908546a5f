package main

import (
	"os"
	"strings"
	"testing"
)

// docs/rls.md shows this command as its Go client: the page must show it as it is, so
// that the client it shows is one that compiles.
func TestDocsShowTheClient(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../../docs/rls.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```go\n"+string(src)+"```\n") {
		t.Fatal("docs/rls.md does not show examples/client/main.go as it is: copy the file into its Go block")
	}
}
