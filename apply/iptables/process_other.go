//go:build !linux

package iptables

import (
	"errors"
	"os"
	"os/exec"
)

// iptables runs only on Linux; the commands that run it refuse to start
// elsewhere, so these only let the package build.

func ownProcessGroup(*exec.Cmd) {}

func memfd(string) (*os.File, error) { return nil, errors.ErrUnsupported }

func raiseStackLimit() {}
