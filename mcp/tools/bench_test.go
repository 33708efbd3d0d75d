package tools_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/testutil/rig"
)

// BenchmarkRoundTrip compares one agent_get over MCP (a test client talking to a
// running `orcr mcp` over its stdio) with the same method (agent.get) as the CLI makes
// it: one call on the socket client, and the whole `orcr agent get --json` process.
// The goal is MCP ≤ 2× the CLI's call; ratio-socket and ratio-cli are reported.
func BenchmarkRoundTrip(b *testing.B) {
	r := rig.New(b)
	r.Serve()
	r.Must("agent", "run", "target", "--keep", "--", "sleep", "600")
	ctx := context.Background()

	cmd := exec.Command(r.Bin, "mcp")
	cmd.Env, cmd.Dir = r.Vars, r.Work
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	cl, err := socket.Dial(ctx, r.Srv.Socket, "")
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()

	measure := func(n int, fn func()) time.Duration {
		fn() // warm
		start := time.Now()
		for range n {
			fn()
		}
		return time.Since(start) / time.Duration(n)
	}
	mcpCall := func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "agent_get", Arguments: map[string]any{"target": "target"}})
		if err != nil || res.IsError {
			b.Fatalf("agent_get: %v %+v", err, res)
		}
	}
	sockCall := func() {
		if _, err := wire.Call(ctx, cl, wire.AgentGet, wire.TargetParams{Target: "target"}); err != nil {
			b.Fatal(err)
		}
	}
	cliCall := func() {
		if res := r.Run("agent", "get", "target", "--json"); res.Code != 0 {
			b.Fatalf("cli: %+v", res)
		}
	}
	pingCall := func() {
		if err := cs.Ping(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	var perMCP, perSock, perCLI, perPing time.Duration
	for b.Loop() {
		perPing = measure(200, pingCall)
		perMCP = measure(200, mcpCall)
		perSock = measure(200, sockCall)
		perCLI = measure(20, cliCall)
	}
	b.ReportMetric(float64(perMCP.Microseconds()), "µs/mcp-call")
	b.ReportMetric(float64(perPing.Microseconds()), "µs/mcp-ping")
	b.ReportMetric(float64(perSock.Microseconds()), "µs/socket-call")
	b.ReportMetric(float64(perCLI.Microseconds()), "µs/cli-process")
	b.ReportMetric(float64(perMCP)/float64(perSock), "ratio-socket")
	b.ReportMetric(float64(perMCP)/float64(perCLI), "ratio-cli")
}
