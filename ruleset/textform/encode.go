package textform

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// bufferSize is the buffer a text form is written through: large rulesets
// are written in few system calls.
const bufferSize = 64 << 10

// Write runs write on a buffered writer over w and flushes it. When w is
// already such a buffered writer (one section of a larger text), write gets
// w itself.
func Write(w io.Writer, write func(*bufio.Writer) error) error {
	bw := bufio.NewWriterSize(w, bufferSize)
	if err := write(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// String returns the text encode writes, for a ruleset's String method:
// String(rs.Encode).
func String(encode func(io.Writer) error) string {
	var b strings.Builder
	_ = encode(&b)
	return b.String()
}

// Encoder is a ruleset with a text form.
type Encoder interface {
	Encode(w io.Writer) error
}

// EncodeAll writes several rulesets one after the other through one
// buffer, each after the line header returns for it when header is not nil.
func EncodeAll[R Encoder](w io.Writer, sets []R, header func(R) string) error {
	return Write(w, func(bw *bufio.Writer) error {
		for _, rs := range sets {
			if header != nil {
				bw.WriteString(header(rs) + "\n")
			}
			if err := rs.Encode(bw); err != nil {
				return err
			}
		}
		return nil
	})
}

// Within places a ParseError of a section of a larger text: first is the
// line number, in the whole text, of the section's first line, and prefix
// goes before the message. Other errors are returned as they are.
func Within(err error, first int, prefix string) error {
	var pe *ParseError
	if !errors.As(err, &pe) {
		return err
	}
	return &ParseError{Line: pe.Line + first - 1, Text: pe.Text, Msg: prefix + pe.Msg}
}
