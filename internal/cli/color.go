package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// The values of --color.
const (
	colorAuto   = "auto"
	colorAlways = "always"
	colorNever  = "never"
)

var colorValues = []string{colorAuto, colorAlways, colorNever}

// ANSI SGR sequences for the diff text, as git diff and terraform plan
// colour it.
const (
	sgrReset  = "\x1b[0m"
	sgrBold   = "\x1b[1m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrCyan   = "\x1b[36m"
	sgrHeader = "\x1b[1;36m"
)

// validateColor checks the value of --color.
func validateColor(v string) error {
	switch v {
	case colorAuto, colorAlways, colorNever:
		return nil
	}
	return fmt.Errorf("--color %q: must be auto, always or never", v)
}

// colorEnabled says whether output is coloured: always with
// --color=always, never with --color=never, and with auto only when it goes
// to a terminal, NO_COLOR (https://no-color.org) is unset or empty and
// TERM is not "dumb".
func colorEnabled(mode string, terminal bool, getenv func(string) string) bool {
	switch mode {
	case colorAlways:
		return true
	case colorNever:
		return false
	}
	return terminal && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// isTerminal says whether w is a file open on a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// lineClass picks the colour of one line of text; "" leaves it plain.
type lineClass func(line []byte) string

// diffClass colours a unified diff: file headers bold cyan, hunk headers
// cyan, additions green, removals red, the plan summary bold.
func diffClass(line []byte) string {
	switch {
	case bytes.HasPrefix(line, []byte("+++ ")), bytes.HasPrefix(line, []byte("--- ")):
		return sgrHeader
	case bytes.HasPrefix(line, []byte("@@")):
		return sgrCyan
	case bytes.HasPrefix(line, []byte("+")):
		return sgrGreen
	case bytes.HasPrefix(line, []byte("-")):
		return sgrRed
	case bytes.HasPrefix(line, []byte("Plan: ")), bytes.HasPrefix(line, []byte("No changes")), bytes.HasPrefix(line, []byte("=== ")):
		return sgrBold
	}
	return ""
}

// scriptClass colours what apply --dry-run prints: only the comment lines
// that head each script, since a leading '-' there is a command
// (iptables-restore's -A), not a removal.
func scriptClass(line []byte) string {
	if bytes.HasPrefix(line, []byte("#")) {
		return sgrHeader
	}
	return ""
}

// colorWriter colours whole lines written through it; a partial line
// waits for its end, or for Flush.
type colorWriter struct {
	w       io.Writer
	class   lineClass
	pending []byte
}

// Write colours every complete line of p and keeps the rest.
func (c *colorWriter) Write(p []byte) (int, error) {
	c.pending = append(c.pending, p...)
	var out bytes.Buffer
	for {
		i := bytes.IndexByte(c.pending, '\n')
		if i < 0 {
			break
		}
		c.colorLine(&out, c.pending[:i])
		out.WriteByte('\n')
		c.pending = c.pending[i+1:]
	}
	if _, err := c.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a last line that has no newline.
func (c *colorWriter) Flush() error {
	if len(c.pending) == 0 {
		return nil
	}
	var out bytes.Buffer
	c.colorLine(&out, c.pending)
	c.pending = nil
	_, err := c.w.Write(out.Bytes())
	return err
}

func (c *colorWriter) colorLine(out *bytes.Buffer, line []byte) {
	sgr := c.class(line)
	if sgr == "" {
		out.Write(line)
		return
	}
	out.WriteString(sgr)
	out.Write(line)
	out.WriteString(sgrReset)
}

// colored returns the writer for output of the given format (-o), its
// lines of the given class, on stdout, and the function that flushes it:
// stdout itself when colour is off or the format is data (JSON, YAML).
func (c *common) colored(format string, class lineClass) (io.Writer, func() error) {
	if format != "text" || !colorEnabled(c.color, isTerminal(c.streams.Out), os.Getenv) {
		return c.streams.Out, func() error { return nil }
	}
	cw := &colorWriter{w: c.streams.Out, class: class}
	return cw, cw.Flush
}
