package figure

import (
	"fmt"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg/draw"
)

// CheckFormat reports whether a figure can be drawn in the format that
// path's extension names (.png, .svg, .pdf, ...), so that a command can
// refuse a bad --plot before its run rather than after it.
func CheckFormat(path string) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format == "" {
		return fmt.Errorf("%s has no extension (want .png, .svg or .pdf)", path)
	}
	if _, err := draw.NewFormattedCanvas(1, 1, format); err != nil {
		return fmt.Errorf("%s: %q is not a format a figure can be drawn in (want .png, .svg or .pdf)", path, format)
	}
	return nil
}
