package cli

import (
	"context"
	"flag"
	"io"
	"log/slog"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2/textlogger"
)

// The long-running commands (apply --watch, proxy) log as kube-proxy
// does: klog's text format on stderr, with -v choosing how much. The
// packages below the CLI log through log/slog; this file turns their
// records into klog lines, mapping slog levels onto klog's -v levels:
//
//	Info, Warn    V(0): starts, stops, repaired drift, the API server lost and back
//	Error         always, as klog's E lines
//	Debug         V(2): syncs that changed something, endpoint updates
//	below Debug   V(4): syncs that changed nothing, every connection
const (
	levelV2 = slog.LevelDebug
	levelV4 = slog.LevelDebug - 4
)

// newLogConfig returns the klog configuration that -v sets, writing to w.
func newLogConfig(w io.Writer) *textlogger.Config {
	return textlogger.NewConfig(textlogger.Output(w))
}

// addLogFlags registers klog's -v (--v) on fs. vmodule is left out: it
// matches Go source files, and the records come through slog.
func addLogFlags(fs *pflag.FlagSet, cfg *textlogger.Config) {
	fs.VarP(goValue{cfg.Verbosity()}, "v", "v", "log verbosity of apply --watch and proxy, as kube-proxy's: 0 starts, stops and errors, 2 also every sync that changed something, 4 also syncs that changed nothing and every proxied connection")
}

// goValue is a standard library flag.Value as a pflag.Value.
type goValue struct{ flag.Value }

func (goValue) Type() string { return "int" }

// logger returns the slog logger that writes klog lines at the -v given
// (at -v=0 for a common made without the root's flags).
func (c *common) logger() *slog.Logger {
	if c.logConfig == nil {
		c.logConfig = newLogConfig(c.streams.ErrOut)
	}
	return slog.New(klogLevels{logr.ToSlogHandler(textlogger.NewLogger(c.logConfig))})
}

// klogLevels maps slog levels to klog's verbosity (see the table above):
// logr reads slog level -N as V(N).
type klogLevels struct{ next slog.Handler }

func klogLevel(l slog.Level) slog.Level {
	switch {
	case l >= slog.LevelInfo:
		return l
	case l >= slog.LevelDebug:
		return -2
	}
	return -4
}

func (h klogLevels) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, klogLevel(l))
}

func (h klogLevels) Handle(ctx context.Context, r slog.Record) error {
	r.Level = klogLevel(r.Level)
	return h.next.Handle(ctx, r)
}

func (h klogLevels) WithAttrs(attrs []slog.Attr) slog.Handler {
	return klogLevels{h.next.WithAttrs(attrs)}
}

func (h klogLevels) WithGroup(name string) slog.Handler {
	return klogLevels{h.next.WithGroup(name)}
}
