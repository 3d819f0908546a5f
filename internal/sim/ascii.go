package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// WriteASCII draws c as text, in plain ASCII, about width columns wide (plus the axis
// labels) and height rows high. The reference series is shaded with '.'. With one other
// series its values are drawn as bars of '#' in front of the shade (a '.' above a '#' is
// what the reference had in excess); with several, each is a marker digit (1, 2, ... in
// order, '*' where several meet), and a legend line names them. When there are more values
// than columns, neighbouring values are averaged into one column.
func (c Chart) WriteASCII(w io.Writer, width, height int) error {
	if err := c.check(); err != nil {
		return err
	}
	width, height = max(width, 8), max(height, 2)
	var ref []float64
	var lines, marks []Series
	for _, s := range c.Series {
		if s.Separate {
			marks = append(marks, s)
			continue
		}
		if s.Reference && ref == nil {
			ref = s.Values
		} else {
			lines = append(lines, s)
		}
	}
	n := len(c.Series[0].Values)
	group := (n + width - 1) / width // values per column
	cols := (n + group - 1) / group
	colWidth := max(1, min(3, width/cols))
	peak := c.peak()
	if group > 1 {
		peak = 0
		for _, s := range c.Series {
			if s.Separate {
				continue
			}
			for i := 0; i < cols; i++ {
				peak = max(peak, average(s.Values, i, group))
			}
		}
	}
	if peak == 0 {
		peak = 1
	}
	// level maps a value to a row level in [0, height], 0 being the axis.
	level := func(v float64) int { return int(math.Round(v / peak * float64(height))) }

	grid := make([][]byte, height+1) // grid[0] is the axis row
	for l := range grid {
		fill := byte(' ')
		if l == 0 {
			fill = '-'
		}
		grid[l] = []byte(strings.Repeat(string(fill), cols*colWidth))
	}
	set := func(l, col int, ch byte, stack bool) {
		for k := 0; k < colWidth; k++ {
			cell := &grid[l][col*colWidth+k]
			if stack && *cell >= '1' && *cell <= '9' || stack && *cell == '*' {
				*cell = '*'
			} else {
				*cell = ch
			}
		}
	}
	for col := 0; col < cols; col++ {
		if ref != nil {
			for l := 1; l <= level(average(ref, col, group)); l++ {
				set(l, col, '.', false)
			}
		}
		switch {
		case len(lines) == 1:
			for l := 1; l <= level(average(lines[0].Values, col, group)); l++ {
				set(l, col, '#', false)
			}
		default:
			for k, s := range lines {
				set(level(average(s.Values, col, group)), col, byte('1'+k%9), true)
			}
		}
	}

	b := bufio.NewWriter(w)
	if c.YLabel != "" {
		fmt.Fprintln(b, c.YLabel)
	}
	for l := height; l >= 0; l-- {
		label := ""
		switch l {
		case height:
			label = formatNumber(math.Round(peak*10) / 10)
		case height / 2:
			label = formatNumber(math.Round(peak*float64(l)/float64(height)*10) / 10)
		case 0:
			label = "0"
		}
		axis := "|"
		if l == 0 {
			axis = "+"
		}
		fmt.Fprintf(b, "%7s %s%s\n", label, axis, strings.TrimRight(string(grid[l]), " "))
	}
	if len(marks) > 0 {
		// A Separate series: '^' under each column where it is above 0.
		row := []byte(strings.Repeat(" ", cols*colWidth))
		for col := 0; col < cols; col++ {
			for _, m := range marks {
				if average(m.Values, col, group) > 0 {
					copy(row[col*colWidth:], strings.Repeat("^", colWidth))
				}
			}
		}
		fmt.Fprintf(b, "%7s %s\n", "", strings.TrimRight(" "+string(row), " "))
	}
	end := FormatDuration(c.Step * time.Duration(n))
	pad := max(1, cols*colWidth-len(end))
	fmt.Fprintf(b, "%7s %-*s%s\n", "", pad+1, "0s", end)
	b.WriteString(asciiLegend(c.Series, lines, marks, ref != nil))
	return b.Flush()
}

// asciiLegend names the symbols of the chart.
func asciiLegend(all, lines, marks []Series, hasRef bool) string {
	var parts []string
	if hasRef {
		for _, s := range all {
			if s.Reference {
				parts = append(parts, ". "+s.Name)
				break
			}
		}
	}
	if len(lines) == 1 {
		parts = append(parts, "# "+lines[0].Name)
	} else {
		for k, s := range lines {
			parts = append(parts, fmt.Sprintf("%c %s", '1'+k%9, s.Name))
		}
		parts = append(parts, "* several")
	}
	for _, m := range marks {
		parts = append(parts, "^ "+m.Name)
	}
	// Wrap at about 72 columns.
	var b strings.Builder
	var line []string
	width := 8
	for _, p := range parts {
		if len(line) > 0 && width+len(p) > 72 {
			b.WriteString("        " + strings.Join(line, "   ") + "\n")
			line, width = nil, 8
		}
		line = append(line, p)
		width += len(p) + 3
	}
	b.WriteString("        " + strings.Join(line, "   ") + "\n")
	return b.String()
}

// average returns the mean of the values of column col, which holds group values.
func average(v []float64, col, group int) float64 {
	lo, hi := col*group, min(len(v), (col+1)*group)
	if lo >= hi {
		return 0
	}
	sum := 0.0
	for _, x := range v[lo:hi] {
		sum += clean(x)
	}
	return sum / float64(hi-lo)
}
