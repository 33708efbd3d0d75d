package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// Notification kinds, as [notify] names them (the dashboard's too).
const (
	KindBlocked     = "blocked"
	KindPlanDrafted = "plan_drafted"
	KindRunAsks     = "run_asks"
	KindRunFailed   = "run_failed"
	KindRunDone     = "run_done"
)

// Notice is what [notify] command gets on its stdin: one JSON object.
type Notice struct {
	Kind  string     `json:"kind"`
	Title string     `json:"title"`
	Body  string     `json:"body"`
	Event wire.Event `json:"event"`
}

// Bounds of the notifier: at most notifyBurst commands in notifyWindow (the rest are
// dropped and counted in the log), each given notifyTimeout.
const (
	notifyBurst   = 6
	notifyWindow  = time.Minute
	notifyTimeout = 10 * time.Second
)

// noticeOf is what an event tells, if it is of a kind that tells.
func noticeOf(ev wire.Event) (Notice, bool) {
	str := func(k string) string { s, _ := ev.Data[k].(string); return s }
	switch ev.Event {
	case wire.EventAgentState:
		a := ev.Agent
		if a == nil || a.State != wire.StateBlocked || ev.From == wire.StateBlocked {
			return Notice{}, false
		}
		why := ""
		if a.Blocked != nil {
			why = a.Blocked.Question
			if why == "" {
				why = a.Blocked.Detail
			}
		}
		return Notice{Kind: KindBlocked, Title: a.Path + " is blocked", Body: why, Event: ev}, true
	case "plan.state":
		if str("state") != "drafted" || str("from") == "drafted" {
			return Notice{}, false
		}
		return Notice{Kind: KindPlanDrafted, Title: "plan " + str("name") + " is drafted", Body: "review it: orcr plan show " + str("name"), Event: ev}, true
	case "run.notify":
		kind := KindRunAsks
		text := strings.TrimPrefix(str("text"), "run "+str("run")+": ")
		switch {
		case strings.Contains(text, "fail"):
			kind = KindRunFailed
		case strings.HasPrefix(text, "run "+str("run")+" is done"):
			kind = KindRunDone
		}
		return Notice{Kind: kind, Title: strings.TrimSpace("run " + str("run") + " " + str("m")), Body: text, Event: ev}, true
	}
	return Notice{}, false
}

// notifier tells the user of each live event that needs them: [notify] command
// and Web Push to the paired browsers that subscribed. Each event once (the stream
// is by seq and starts at the newest event, so a restart tells nothing again, and
// a seq seen is never told twice), the kinds turned off skipped, at most
// notifyBurst a minute for both.
func (s *Service) notifier(ctx context.Context, k core.Kernel) {
	defer s.wg.Done()
	ch, err := k.Subscribe(core.WithCaller(ctx, caller()), wire.SubscribeParams{After: k.LastSeq()})
	if err != nil {
		s.log.Warn("notify: subscribe", "err", err)
		return
	}
	var sent []time.Time
	seen := map[uint64]bool{}
	var order []uint64
	dropped := 0
	for ev := range ch {
		n, ok := noticeOf(ev)
		if !ok || s.notifyOff[n.Kind] {
			continue
		}
		if ev.Seq > 0 {
			if seen[ev.Seq] {
				continue
			}
			seen[ev.Seq] = true
			if order = append(order, ev.Seq); len(order) > 1024 {
				delete(seen, order[0])
				order = order[1:]
			}
		}
		now := time.Now()
		for len(sent) > 0 && now.Sub(sent[0]) > notifyWindow {
			sent = sent[1:]
		}
		if len(sent) >= notifyBurst {
			dropped++
			s.log.Warn("notify: over the rate, not told", "kind", n.Kind, "seq", ev.Seq, "dropped", dropped)
			continue
		}
		sent = append(sent, now)
		if s.notifyCmd != "" {
			if err := s.runNotify(ctx, n); err != nil {
				s.log.Warn("notify: command failed", "kind", n.Kind, "seq", ev.Seq, "err", err)
			}
		}
		s.push.send(ctx, n, s.auth.alive)
	}
}

func (s *Service) runNotify(ctx context.Context, n Notice) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", s.notifyCmd)
	cmd.Stdin = bytes.NewReader(append(b, '\n'))
	cmd.Env = append(cmd.Environ(), "ORCR_NOTIFY_KIND="+n.Kind, "ORCR_NOTIFY_TITLE="+n.Title)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %.200s", err, out)
	}
	return nil
}
