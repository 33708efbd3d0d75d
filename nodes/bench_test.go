package nodes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/testutil/sshnode"
	"orcr/testutil/wait"
)

// The numbers of issue 22, each beside its local floor measured in the same run:
// spawn on a node vs here, agent ls with 100 agents on one node vs 100 here, a node
// agent's event to the coordinator's subscriber, and the coordinator's RSS with
// 3 nodes × 100 agents. Run: go test -run XXX -bench . -benchtime 20x ./nodes/

var lastNodes []*sshnode.Node

func benchCoord(b *testing.B, nodes int) (*coord, []string) {
	c := newCoord(b)
	if bin := os.Getenv("ORCR_BENCH_BIN"); bin != "" {
		// Another build of orcr (before/after figures in one run, interleaved).
		c.bin = bin
	}
	if dir := os.Getenv("ORCR_BENCH_MEMPROFILE"); dir != "" {
		// SIGUSR1 then makes the coordinator write its heap profile there.
		c.env = append(c.env, "ORCR_MEMPROFILE="+dir)
	}
	c.start()
	var names []string
	lastNodes = nil
	for i := 0; i < nodes; i++ {
		n := c.node()
		c.trust(n)
		name := fmt.Sprintf("n%d", i)
		c.addNode(name, n.Port())
		names = append(names, name)
		lastNodes = append(lastNodes, n)
	}
	return c, names
}

func spawnLive(b *testing.B, c *coord, path, node string) {
	ctx := context.Background()
	a, err := c.cl.Run(ctx, wire.RunParams{Path: path, Node: node, Argv: []string{"cat"}, Cwd: "/tmp"})
	if err != nil {
		b.Fatal(err)
	}
	// Polled every 2 ms (wait.Until's step would be the figure): launched means its
	// pane runs, here or on the node — live and past starting.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		x, err := c.cl.Get(ctx, a.ID)
		if err == nil && x.State.Live() && x.State != wire.StateStarting {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s did not start: %s", path, x.State)
		}
	}
}

// BenchmarkSpawn: from agent.run to the coordinator's record live, here and on a node.
func BenchmarkSpawn(b *testing.B) {
	c, names := benchCoord(b, 1)
	for _, where := range []string{"local", names[0]} {
		b.Run(where, func(b *testing.B) {
			node := where
			if where == "local" {
				node = ""
			}
			for i := 0; i < b.N; i++ {
				spawnLive(b, c, fmt.Sprintf("s/%s/%d", where, i), node)
			}
			b.StopTimer()
			c.cl.Kill(context.Background(), wire.KillParams{Glob: "s/" + where + "/**"})
		})
	}
}

// BenchmarkList100: the coordinator's agent ls (table rows) with 100 agents on one
// node, and with 100 here.
func BenchmarkList100(b *testing.B) {
	c, names := benchCoord(b, 1)
	ctx := context.Background()
	// Both sets are spawned first, so each list runs beside the same load: 100 agents
	// here and 100 on the node (a server and tmux on this machine's same two cores).
	for _, where := range []string{"local", names[0]} {
		node := where
		if where == "local" {
			node = ""
		}
		for i := 0; i < 100; i++ {
			spawnLive(b, c, fmt.Sprintf("l/%s/%03d", where, i), node)
		}
	}
	for _, where := range []string{names[0], "local", names[0], "local"} {
		b.Run(where, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				t, err := c.cl.ListTable(ctx, wire.ListParams{Glob: "l/" + where + "/**", Table: true})
				if err != nil || len(t.Rows) != 100 {
					b.Fatalf("%v %d rows", err, len(t.Rows))
				}
			}
		})
	}
	n := c.show(names[0])
	b.Logf("node %s after 100 agents: state %s, %d agents", names[0], n.State, n.Agents)
}

// BenchmarkNodeEvent: a node agent's state change, seen by a subscriber of the node's
// server and by a subscriber of the coordinator: the time between the two, p50/p99.
func BenchmarkNodeEvent(b *testing.B) {
	c, names := benchCoord(b, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spawnLive(b, c, "e/x", names[0])
	a := c.agent("e/x")
	nc := nodeClient(b, lastNodes[0])
	nev, err := nc.Subscribe(ctx, wire.SubscribeParams{After: 0})
	if err != nil {
		b.Fatal(err)
	}
	info, err := c.cl.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cev, err := c.cl.Subscribe(ctx, wire.SubscribeParams{After: info.LastSeq})
	if err != nil {
		b.Fatal(err)
	}
	type seen struct {
		to wire.State
		at time.Time
	}
	nodeSeen, coordSeen := make(chan seen, 1024), make(chan seen, 1024)
	go func() {
		for ev := range nev {
			if ev.Event == wire.EventAgentState && ev.Agent != nil && ev.Agent.ID == a.ID {
				nodeSeen <- seen{ev.To, time.Now()}
			}
		}
	}()
	go func() {
		for ev := range cev {
			if ev.Event == wire.EventAgentState && ev.Agent != nil && ev.Agent.ID == a.ID {
				coordSeen <- seen{ev.To, time.Now()}
			}
		}
	}()
	// Drain what the spawn produced.
	time.Sleep(500 * time.Millisecond)
	for len(nodeSeen) > 0 {
		<-nodeSeen
	}
	for len(coordSeen) > 0 {
		<-coordSeen
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := nc.Send(ctx, wire.SendParams{Target: a.ID, Text: "line " + strconv.Itoa(i), Enter: true}); err != nil {
			b.Fatal(err)
		}
		// Each state change the node announces, matched with the coordinator's.
		deadline := time.After(10 * time.Second)
		for got := 0; got < 1; {
			select {
			case ns := <-nodeSeen:
				select {
				case cs := <-coordSeen:
					if cs.to == ns.to {
						lat = append(lat, cs.at.Sub(ns.at))
						got++
					}
				case <-deadline:
					b.Fatal("the coordinator did not see the node's event")
				}
			case <-deadline:
				b.Fatal("no state change on the node")
			}
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkCoordinatorRSS: the coordinator's resident memory with 3 nodes × 100 agents
// (rss-MB), with the 3 nodes linked and no agent (rss0-MB), and what each remote agent
// costs it (KB/agent). With $ORCR_BENCH_MEMPROFILE=DIR the coordinator's heap profile
// at the end is DIR/heap.1.pprof (go tool pprof -sample_index=inuse_space).
func BenchmarkCoordinatorRSS(b *testing.B) {
	c, names := benchCoord(b, 3)
	settle := func() int {
		// The reading once the spawns' garbage is collected, as a server idles.
		c.cl.Info(context.Background())
		time.Sleep(time.Second)
		return rssKB(b, c.srv.PID())
	}
	zero := settle()
	before, _ := c.cl.Info(context.Background())
	for _, node := range names {
		for i := 0; i < 100; i++ {
			spawnLive(b, c, fmt.Sprintf("r/%s/%03d", node, i), node)
		}
	}
	for i := 0; i < b.N; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	full := settle()
	after, _ := c.cl.Info(context.Background())
	b.ReportMetric(float64(after.LastSeq-before.LastSeq)/300, "events/agent")
	b.ReportMetric(float64(full)/1024, "rss-MB")
	b.ReportMetric(float64(zero)/1024, "rss0-MB")
	b.ReportMetric(float64(full-zero)/300, "KB/agent")
	if dir := os.Getenv("ORCR_BENCH_MEMPROFILE"); dir != "" {
		out := filepath.Join(dir, "mem.1.txt")
		os.Remove(out)
		syscall.Kill(c.srv.PID(), syscall.SIGUSR1)
		if !wait.Until(time.Minute, func() bool { _, err := os.Stat(out); return err == nil }) {
			b.Fatal("no memory dump")
		}
		m, _ := os.ReadFile(out)
		b.Logf("coordinator memory with 300 node agents:\n%s", m)
	}
}

func rssKB(b *testing.B, pid int) int {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(s), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			v, _ := strconv.Atoi(strings.Fields(l)[1])
			return v
		}
	}
	return 0
}

// BenchmarkCallFromNode: agent.get of a node agent's own record by that agent, over
// the socket the link forwards to the node (what `orcr` in a node's pane dials),
// beside the same call on the coordinator's own socket — the floor.
func BenchmarkCallFromNode(b *testing.B) {
	c, names := benchCoord(b, 1)
	ctx := context.Background()
	spawnLive(b, c, "f/there", names[0])
	there := c.agent("f/there")
	for _, k := range []struct{ name, sock, id string }{
		{"coordinator-socket", c.srv.Socket, ""},
		{"forwarded-from-node", filepath.Join(lastNodes[0].Home, "coordinator.sock"), there.ID},
	} {
		b.Run(k.name, func(b *testing.B) {
			tr, err := socket.Dial(ctx, k.sock, k.id)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := wire.Call(ctx, tr, wire.AgentGet, wire.TargetParams{Target: there.ID}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	c.cl.Kill(ctx, wire.KillParams{Glob: "f/**"})
}
