//go:build linux

package cli

import (
	"context"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

func (o *TraceOptions) loadLive(context.Context, *tracer) error {
	return fmt.Errorf("--live is not implemented yet")
}

func (o *TraceOptions) crossCheck(context.Context, *tracer, *trace.Result, trace.Entry) error {
	return fmt.Errorf("--kernel is not implemented yet")
}
