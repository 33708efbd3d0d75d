package pty_test

import (
	"testing"

	"orcr/core"
	"orcr/core/hosttest"
	"orcr/pty"
)

func TestConformance(t *testing.T) {
	hosttest.Run(t, hosttest.Factory{
		New: func(t *testing.T) core.Host { return pty.New(pty.Options{}) },
	})
}
