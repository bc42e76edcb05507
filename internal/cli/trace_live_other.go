//go:build !linux

package cli

import (
	"context"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

func (o *TraceOptions) liveDesired(context.Context, *desired) (*desired, error) {
	return nil, fmt.Errorf("--live reads the node's kernel ruleset: it needs Linux")
}

func (o *TraceOptions) crossCheck(context.Context, *tracer, *trace.Result, trace.Entry) error {
	return fmt.Errorf("--kernel injects a packet in the node's kernel: it needs Linux")
}
