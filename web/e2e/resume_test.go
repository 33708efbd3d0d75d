package e2e_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/rig"
	"orcr/testutil/wait"
)

// TestEventsResumeAcrossServerRestart: a client of GET /api/v1/events reads events,
// the orcr serve process stops and a new one starts on the same home and address; the
// client reconnects with Last-Event-ID and gets every event it missed and none twice.
func TestEventsResumeAcrossServerRestart(t *testing.T) {
	r := rig.New(t)
	base := serveWeb(t, r)
	lines := strings.Split(strings.TrimSpace(r.Must("web", "token", "new", "--scope", "read")), "\n")
	tok := lines[len(lines)-1]
	seen := map[uint64]int{}
	var last uint64
	// read follows the stream from the cursor until the stream has given seq until.
	read := func(cursor, until uint64) uint64 {
		req, _ := http.NewRequest("GET", base+"/api/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Last-Event-ID", fmt.Sprint(cursor))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		timer := time.AfterFunc(wait.Scale(20*time.Second), func() { resp.Body.Close() })
		defer timer.Stop()
		br := bufio.NewReader(resp.Body)
		for cursor < until {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended at seq %d of %d: %v", cursor, until, err)
			}
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id: "); ok {
				n, _ := strconv.ParseUint(id, 10, 64)
				seen[n]++
				cursor = n
			}
		}
		return cursor
	}
	lastSeq := func() uint64 {
		var info wire.InfoResult // doctor --json carries the server's info
		wait.For(t, 10*time.Second, "server.info", func() bool {
			got := r.Run("doctor", "--json")
			i := strings.Index(got.Out, `"lastSeq":`)
			if i < 0 {
				return false
			}
			fmt.Sscanf(got.Out[i+len(`"lastSeq":`):], "%d", &info.LastSeq)
			return true
		})
		return info.LastSeq
	}
	for i := range 3 {
		r.Must("agent", "run", fmt.Sprintf("before/%d", i), "--cwd", r.Work, "--", "sh", "-c", "sleep 60")
	}
	r.Must("agent", "wait", "before/**", "--until", "idle", "--timeout", "30s")
	last = read(0, lastSeq())
	r.Stop()
	r.Serve() // a new process: the pty host's panes died with the old one, so the agents are reconciled (more events)
	for i := range 3 {
		r.Must("agent", "run", fmt.Sprintf("after/%d", i), "--cwd", r.Work, "--", "sh", "-c", "sleep 60")
	}
	r.Must("agent", "wait", "after/**", "--until", "idle", "--timeout", "30s")
	end := lastSeq()
	if end <= last+6 {
		t.Fatalf("only %d events after the restart", end-last)
	}
	read(last, end)
	for seq := uint64(1); seq <= end; seq++ {
		if seen[seq] != 1 {
			t.Errorf("seq %d seen %d times", seq, seen[seq])
		}
	}
	r.Must("agent", "kill", "**", "--yes")
}
