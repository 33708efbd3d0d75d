package main

import (
	"context"
	"fmt"
)

// runDashboard opens the full-screen dashboard.
func runDashboard(ctx context.Context, io *streams) error {
	return fmt.Errorf("dashboard not wired yet")
}
