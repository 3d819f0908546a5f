package chart

import "strings"

// TextWidth estimates the width in pixels of s set in a sans-serif font of size px,
// generously (DejaVu Sans, a common fallback for Helvetica, is wide), so that wrapped text
// fits whatever font renders it.
func TextWidth(s string, size float64, bold bool) float64 {
	em := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("iljtfrI.,;:|!'()[] ", r):
			em += 0.36
		case strings.ContainsRune("mwMW", r):
			em += 0.92
		case r >= 'A' && r <= 'Z':
			em += 0.72
		default:
			em += 0.62
		}
	}
	if bold {
		em *= 1.1
	}
	return em * size
}

// wrapText breaks s at spaces into lines no wider than width (by TextWidth); a word wider
// than width gets a line of its own. An empty s has no line.
func wrapText(s string, width, size float64, bold bool) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && TextWidth(line+" "+word, size, bold) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
