package textform

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// fake is a ruleset whose text form is its string, written in two pieces
// so that a missing flush shows.
type fake string

func (f fake) Encode(w io.Writer) error {
	return Write(w, func(bw *bufio.Writer) error {
		bw.WriteString(string(f[:len(f)/2]))
		bw.WriteString(string(f[len(f)/2:]))
		return nil
	})
}

func TestEncodeAll(t *testing.T) {
	sets := []fake{"a\n", "bc\n"}
	var b strings.Builder
	if err := EncodeAll(&b, sets, func(f fake) string { return "# " + strings.TrimSpace(string(f)) }); err != nil {
		t.Fatal(err)
	}
	if want := "# a\na\n# bc\nbc\n"; b.String() != want {
		t.Errorf("EncodeAll with headers = %q, want %q", b.String(), want)
	}
	b.Reset()
	_ = EncodeAll(&b, sets, nil)
	if want := "a\nbc\n"; b.String() != want {
		t.Errorf("EncodeAll = %q, want %q", b.String(), want)
	}
	if got := String(fake("xyz").Encode); got != "xyz" {
		t.Errorf("String = %q", got)
	}
}

func TestWithin(t *testing.T) {
	err := Within(&ParseError{Line: 2, Text: "x", Msg: "bad"}, 10, "inner: ")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 11 || pe.Msg != "inner: bad" || pe.Text != "x" {
		t.Errorf("Within = %#v, want line 11 with the prefixed message", err)
	}
	other := errors.New("other")
	if Within(other, 10, "p") != other {
		t.Error("Within changed an error that is not a ParseError")
	}
}
