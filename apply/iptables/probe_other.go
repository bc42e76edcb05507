//go:build !linux

package iptables

import "errors"

// Off Linux there is no kernel to probe; the commands that detect the
// backend refuse to start there, so these only let the package build.

// NFTTables implements Probe.
func (KernelProbe) NFTTables() (bool, error) { return false, errors.ErrUnsupported }

// NFTHint implements Probe.
func (KernelProbe) NFTHint() (bool, error) { return false, errors.ErrUnsupported }

// LegacyTables implements Probe.
func (KernelProbe) LegacyTables() (bool, error) { return false, errors.ErrUnsupported }

// LegacyInUse implements Probe.
func (KernelProbe) LegacyInUse() (bool, error) { return false, errors.ErrUnsupported }

// NFTRules implements Probe.
func (KernelProbe) NFTRules([]TableChain) (string, error) { return "", errors.ErrUnsupported }

// LegacyRules implements Probe.
func (KernelProbe) LegacyRules([]TableChain) (string, error) { return "", errors.ErrUnsupported }
