//go:build !linux

package kernel

import (
	"errors"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

var errLinux = errors.New("--kernel injects a packet into this node's kernel: it needs Linux")

// NewProbe needs Linux.
func NewProbe(trace.Packet) (Probe, error) { return Probe{}, errLinux }

// Run needs Linux.
func Run(Probe, trace.Via) ([]Event, error) { return nil, errLinux }

// Positions needs Linux.
type Positions struct{}

// NewPositions needs Linux.
func NewPositions() (*Positions, error) { return nil, errLinux }

// Of needs Linux.
func (*Positions) Of(string, string, string, uint64) (int, error) { return -1, errLinux }

// Leftovers needs Linux.
func Leftovers(bool, time.Duration) ([]string, error) { return nil, errLinux }
