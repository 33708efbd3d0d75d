package ui

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
)

// Tests run the commands Update returns the way the program would, but one at a time
// and each to its end, so what a test sees never depends on how fast the machine is. A
// command is never dropped for being slow: one that has not answered by cmdDeadline
// fails the test. Only commands that wait on the clock or on the server's event stream
// (waits) are not run; their messages are what a test delivers itself when it wants
// them (a settleMsg, a planTickMsg).

// cmdDeadline bounds one command: far beyond what any of these commands takes on a
// loaded machine, so reaching it means a hang.
const cmdDeadline = time.Minute

// waitingCmds name the commands that wait rather than compute: timers (tea.Tick and
// tea.Every, behind the refresh, settle, plan and history ticks), the text cursors'
// blink, and the subscription's waitEvents. The names are Go's names of the closures
// those functions return; an inlined call puts its caller's name in front, hence the
// match on the tail.
var waitingCmds = []string{".Tick.func", ".Every.func", "/cursor.(*Model).Blink.func", ".waitEvents.func"}

// waits reports whether cmd is one of waitingCmds.
func waits(cmd tea.Cmd) bool {
	name := runtime.FuncForPC(reflect.ValueOf(cmd).Pointer()).Name()
	for _, w := range waitingCmds {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// doCmd runs cmd to its end and returns the messages it yields, in order: a batch or
// a sequence is taken apart and its commands run the same way. Commands that wait
// (waits) yield nothing.
func doCmd(t testing.TB, cmd tea.Cmd) []tea.Msg {
	t.Helper()
	return doCmds(t, cmd, false)
}

// doCmdNoService is doCmd for a model without a service (newTestModel's): a command
// that calls it panics on the nil service and yields nothing.
func doCmdNoService(t testing.TB, cmd tea.Cmd) []tea.Msg {
	t.Helper()
	return doCmds(t, cmd, true)
}

func doCmds(t testing.TB, cmd tea.Cmd, nilService bool) []tea.Msg {
	t.Helper()
	if cmd == nil || waits(cmd) {
		return nil
	}
	type answer struct {
		msg      tea.Msg
		panicked any
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- answer{panicked: p}
			}
		}()
		ch <- answer{msg: cmd()}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-time.After(cmdDeadline):
		t.Fatalf("a command (%s) did not answer within %s", runtime.FuncForPC(reflect.ValueOf(cmd).Pointer()).Name(), cmdDeadline)
	}
	if a.panicked != nil {
		if nilService {
			return nil
		}
		t.Fatalf("a command panicked: %v", a.panicked)
	}
	var out []tea.Msg
	switch msg := a.msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			out = append(out, doCmds(t, c, nilService)...)
		}
	default:
		// tea.Sequence's message is an unexported slice of commands.
		if v := reflect.ValueOf(msg); v.Kind() == reflect.Slice && v.Type().Elem() == reflect.TypeOf(tea.Cmd(nil)) {
			for i := 0; i < v.Len(); i++ {
				out = append(out, doCmds(t, v.Index(i).Interface().(tea.Cmd), nilService)...)
			}
			break
		}
		out = append(out, msg)
	}
	return out
}

// maxMsgs bounds the messages one step of a test may lead to: more means two
// components keep answering each other.
const maxMsgs = 500

// feed delivers msg to update, then the messages the commands it returns yield, until
// none is left or update returns an action, which feed returns.
func feed(t testing.TB, msg tea.Msg, update func(tea.Msg) (tea.Cmd, action)) action {
	t.Helper()
	queue := []tea.Msg{msg}
	for n := 0; len(queue) > 0; n++ {
		if n > maxMsgs {
			t.Fatalf("messages never settle; the last: %s", fmt.Sprintf("%T", queue[0]))
		}
		m := queue[0]
		queue = queue[1:]
		cmd, act := update(m)
		if act != nil {
			return act
		}
		queue = append(queue, doCmd(t, cmd)...)
	}
	return nil
}

// feedModel delivers msg to m as feed does.
func feedModel(t testing.TB, m *Model, msg tea.Msg) {
	t.Helper()
	feed(t, msg, func(msg tea.Msg) (tea.Cmd, action) {
		_, cmd := m.Update(msg)
		return cmd, nil
	})
}

// slowDialog answers any key with a command that takes a while — as a form's
// next-field command does on a loaded machine — and closes when its message arrives.
type slowDialog struct{ size }

type slowMsg struct{}

func (d *slowDialog) Init() tea.Cmd { return nil }
func (d slowDialog) View() string   { return "" }

func (d *slowDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	switch msg.(type) {
	case tea.KeyPressMsg:
		return func() tea.Msg {
			// The sleep stands for a busy machine; nothing waits on it. The old
			// harness gave a command 20 ms before dropping it.
			time.Sleep(200 * time.Millisecond)
			return slowMsg{}
		}, nil
	case slowMsg:
		return nil, closeAction{}
	}
	return nil, nil
}

// TestSlowCommandsAreRun: a command that takes longer than a fixed time is run to its
// end, not dropped (ui/dialogs_test.go dropped any that took over 20 ms, and a form
// under load lost its next-field message), while timers and blinks are not run at all.
func TestSlowCommandsAreRun(t *testing.T) {
	if act := runDialog(t, &slowDialog{}, key("x")); act != (closeAction{}) {
		t.Fatalf("the slow command's message never arrived: %#v", act)
	}
	for _, cmd := range []tea.Cmd{tickCmd(), refreshCmd(), waitEvents(make(chan wire.Event))} {
		if !waits(cmd) {
			t.Fatalf("%s is not taken for a command that waits", runtime.FuncForPC(reflect.ValueOf(cmd).Pointer()).Name())
		}
	}
	in := textinput.New()
	if blink := in.Focus(); !waits(blink) {
		t.Fatal("the cursor's blink is not taken for a command that waits")
	}
	if waits(func() tea.Msg { return nil }) {
		t.Fatal("a plain command is taken for one that waits")
	}
}
