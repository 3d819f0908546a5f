package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// barWidth is the number of cells of the progress bar.
const barWidth = 30

// isTerminal reports whether w is a terminal (a character device), where a progress bar
// redrawn with carriage returns makes sense.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressBar redraws one line, "[#####     ] 4.0s/10s  123456 decisions", in place.
// draw is called from one goroutine at a time.
type progressBar struct {
	w     io.Writer
	total time.Duration
	last  int // length of the last line drawn
}

// draw redraws the bar for elapsed time and n decisions.
func (p *progressBar) draw(elapsed time.Duration, n int64) {
	filled := 0
	if p.total > 0 {
		filled = int(min(barWidth, int64(elapsed)*barWidth/int64(p.total)))
	}
	line := fmt.Sprintf("[%s%s] %.1fs/%v  %d decisions", strings.Repeat("#", filled),
		strings.Repeat(" ", barWidth-filled), elapsed.Seconds(), p.total, n)
	pad := max(0, p.last-len(line))
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
	p.last = len(line)
}

// clear erases the bar, leaving the cursor at the start of the line.
func (p *progressBar) clear() {
	if p.last > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.last))
		p.last = 0
	}
}
