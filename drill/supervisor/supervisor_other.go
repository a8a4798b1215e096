//go:build !linux

package supervisor

import (
	"context"
	"time"
)

// Supervisor runs worker processes; on this system it cannot, and New
// returns ErrNeedsLinux.
type Supervisor struct{}

// New returns ErrNeedsLinux: drills need Linux for signals and process
// groups.
func New(specs []Spec, opts Options) (*Supervisor, error) { return nil, ErrNeedsLinux }

// Start returns ErrNeedsLinux.
func (s *Supervisor) Start(ctx context.Context) error { return ErrNeedsLinux }

// Kill returns ErrNeedsLinux.
func (s *Supervisor) Kill(name string, restartAfter time.Duration) error { return ErrNeedsLinux }

// Terminate returns ErrNeedsLinux.
func (s *Supervisor) Terminate(name string, restartAfter time.Duration) error { return ErrNeedsLinux }

// Stall returns ErrNeedsLinux.
func (s *Supervisor) Stall(name string, d time.Duration) error { return ErrNeedsLinux }

// Stop returns nil: nothing was started.
func (s *Supervisor) Stop(ctx context.Context, grace time.Duration) error { return nil }

// Events returns nothing.
func (s *Supervisor) Events() []Event { return nil }

// PIDs returns nothing.
func (s *Supervisor) PIDs() map[string]int { return nil }

// Unexpected returns 0.
func (s *Supervisor) Unexpected() int { return 0 }

// Freeze does nothing: there is nothing to freeze.
func (s *Supervisor) Freeze() {}
