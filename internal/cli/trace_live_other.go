//go:build !linux

package cli

import (
	"context"
	"fmt"
)

func (o *TraceOptions) liveDesired(context.Context, *desired) (*desired, error) {
	return nil, fmt.Errorf("--live reads the node's kernel ruleset: it needs Linux")
}
