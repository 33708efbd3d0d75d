package ui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
	"orcr/themes"
	webapi "orcr/web/api"
)

type focus int

const (
	focusTree focus = iota
	focusPreview
	focusPanel
	nFocus
)

// Model is the dashboard's root model. It owns focus, layout and the dialog stack, holds
// the agent index, and routes each message family to its handler.
type Model struct {
	ctx    context.Context
	cancel context.CancelFunc
	svc    wire.Transport
	opts   Options
	c      *common

	idx     *index
	tree    *treeModel
	preview *previewModel
	panel   *panelModel
	status  *statusModel
	dialogs []dialog
	focus   focus

	w, h      int
	themeName string

	info wire.InfoResult
	// web is the server's web gateway (address, paired browsers), for the bar.
	web webapi.StatusResult
	// webLoaded says web has been read once (the web dialog shows "loading…" before).
	webLoaded bool
	lastSeq   uint64
	subOK     bool
	// conn is the server connection's state as the bar shows it; lostAt is when a
	// connected dashboard lost its server (connection.go).
	conn   connState
	lostAt time.Time
	// toldSeq is the last event sequence number told (tell.go): nothing is told twice.
	toldSeq   uint64
	loaded    bool
	quit      QuitChoice
	quitting  bool
	farewell  string // printed on the terminal after the dashboard ends (see farewellText)
	attaching bool

	// Preview reads are coalesced: at most one in flight; readDirty asks for one more.
	readWant     string
	readInFlight bool
	readDirty    bool
	// settleArmed is set while a trailing read is scheduled; settleEvents counts screen
	// events since it was armed.
	settleArmed  bool
	settleEvents int

	// kills are the confirmed kills running in the background, by job id (kill.go).
	kills   map[int]*killJob
	killSeq int
}

// New builds the root model. It does no I/O; Init starts the first calls.
func New(ctx context.Context, svc wire.Transport, opts Options) (*Model, error) {
	styles, km, err := resolveLook(opts)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &common{keys: km, now: time.Now(), log: log}
	c.setStyles(styles)
	idx := newIndex()
	m := &Model{ctx: ctx, cancel: cancel, svc: svc, opts: opts, c: c, idx: idx,
		tree: newTree(c, idx), preview: newPreview(c), panel: newPanel(c), status: newStatus(c),
		themeName: styles.Palette.Name}
	if m.opts.Mode == "" {
		m.opts.Mode = "in-process"
	}
	m.setFocus(focusTree)
	return m, nil
}

// Close stops the subscription and any call still running.
func (m *Model) Close() { m.cancel() }

// Quit is the choice made on quit (QuitPlain until then).
func (m *Model) Quit() QuitChoice { return m.quit }

// Farewell is the line to print once the terminal is restored: set on a plain quit
// while agents keep running, saying so and how to get back to them.
func (m *Model) Farewell() string { return m.farewell }

// Init starts the first calls: server info (then the subscription), the agent list, the
// panels, and the clocks.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(infoCmd(m.ctx, m.svc), listCmd(m.ctx, m.svc), queueCmd(m.ctx, m.svc),
		usageCmd(m.ctx, m.svc), schedulesCmd(m.ctx, m.svc), listenersCmd(m.ctx, m.svc), nodesCmd(m.ctx, m.svc), tickCmd(), refreshCmd())
}

// Update routes by message family; each family has its own handler. Once the message
// is handled the panes are laid out again (layout), so View only draws.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	m.layout()
	return m, cmd
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	if cmd, ok := m.updateListeners(msg); ok {
		return cmd
	}
	if msg, ok := msg.(nodesMsg); ok {
		m.panel.nodes.set(msg.ns, msg.err)
		if !m.panel.shown(m.panel.tab) {
			m.panel.tab = tabQueue // the last node was removed while its tab was open
		}
		return nil
	}
	if cmd, ok := m.updateRuns(msg); ok {
		return cmd
	}
	if cmd, ok := m.updateResume(msg); ok {
		return cmd
	}
	if cmd, ok := m.updateKills(msg); ok {
		return cmd
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
		return m.toDialog(msg)
	case tea.KeyPressMsg:
		return m.updateKey(msg)
	case tea.MouseClickMsg, tea.MouseWheelMsg:
		return m.updateMouse(msg.(tea.MouseMsg))
	case infoMsg, subscribedMsg, eventsMsg, subEndedMsg, resubscribeMsg:
		return m.updateCore(msg)
	case listMsg, readMsg, queueMsg, usageMsg, schedulesMsg, sentMsg, spawnedMsg,
		attachMsg, attachDoneMsg, dryRunMsg, answeredMsg:
		return m.updateResult(msg)
	case tickMsg:
		m.c.now = time.Time(msg)
		m.status.expire(m.c.now)
		return tickCmd()
	case settleMsg:
		return m.onSettle()
	case againMsg:
		return m.updateAgain(msg)
	case queueCancelMsg:
		return queueCancelCmd(m.ctx, m.svc, msg)
	case queuePriorityMsg:
		return queuePriorityCmd(m.ctx, m.svc, msg)
	case queuePrioritisedMsg:
		if msg.err != nil {
			m.status.notify(m.c.now, "priority of "+msg.path+": "+msg.err.Error(), true)
		} else {
			m.status.notify(m.c.now, fmt.Sprintf("%s: priority %d, queue position %d", msg.path, msg.a.Priority, msg.a.QueuePos), false)
		}
		return queueCmd(m.ctx, m.svc)
	case queueCancelledMsg:
		if msg.err != nil {
			m.status.notify(m.c.now, "cancel "+msg.path+": "+msg.err.Error(), true)
		} else {
			m.status.notify(m.c.now, "cancelled "+msg.path+" (it was queued)", false)
		}
		return queueCmd(m.ctx, m.svc)
	case notifyFailedMsg:
		// The desktop has no notification service after all: say it once in the log
		// and use the terminal's notification from now on.
		m.c.log.Warn("dashboard: desktop notification", "error", msg.err)
		m.opts.Notify.NotifySend = ""
		return nil
	case webMsg:
		if msg.err == nil {
			m.web, m.webLoaded = msg.st, true
		}
		for _, d := range m.dialogs {
			if w, ok := d.(*webDialog); ok {
				w.set(msg.st, msg.err)
			}
		}
		return nil
	case refreshMsg:
		cmd := tea.Batch(queueCmd(m.ctx, m.svc), usageCmd(m.ctx, m.svc), schedulesCmd(m.ctx, m.svc),
			listenersCmd(m.ctx, m.svc), nodesCmd(m.ctx, m.svc), webStatusCmd(m.ctx, m.svc), refreshCmd())
		// An open runs view is read again too: a coder's model and a milestone's
		// clock change in the run's record without a run event of their own.
		if d := m.runsView(); d != nil && m.conn != connLost {
			cmd = tea.Batch(cmd, m.updateAction(d.reload()))
		}
		return cmd
	}
	// Anything else (cursor blinks, form internals) belongs to the top dialog.
	return m.toDialog(msg)
}

// layout brings what the panes show in line with the state after a message: the tree
// re-finds its selection and window (rows may have been rebuilt), and the preview
// follows the selection. It runs after every message, so View never has to.
func (m *Model) layout() {
	m.tree.sync()
	m.syncPreview()
}

// toDialog hands a message to the top dialog and acts on what it returns.
func (m *Model) toDialog(msg tea.Msg) tea.Cmd {
	if len(m.dialogs) == 0 {
		return nil
	}
	cmd, act := m.dialogs[len(m.dialogs)-1].Update(msg)
	return tea.Batch(cmd, m.updateAction(act))
}

// pushDialog opens d on top of the stack, sized to the screen before it first draws.
func (m *Model) pushDialog(d dialog) tea.Cmd {
	m.dialogs = append(m.dialogs, d)
	d.SetSize(m.dialogRoom())
	return d.Init()
}

// dialogRoom is the room a dialog has: the screen less a margin.
func (m *Model) dialogRoom() (w, h int) { return m.w - 4, m.h - 2 }

func (m *Model) popDialog() {
	if len(m.dialogs) > 0 {
		m.dialogs = m.dialogs[:len(m.dialogs)-1]
	}
}

func (m *Model) setFocus(f focus) {
	m.focus = f
	m.tree.focus = f == focusTree
	m.preview.focus = f == focusPreview
	m.panel.focus = f == focusPanel
}

// setTheme switches to the named theme; the name must resolve.
func (m *Model) setTheme(name string) error {
	pal, err := themes.Resolve(name, m.opts.UserThemes)
	if err != nil {
		return err
	}
	m.c.setStyles(themes.Build(pal))
	m.themeName = name
	return nil
}

// resize lays the panes out: tree on the left, preview over the tabbed panel on the
// right, the status bar at the bottom.
func (m *Model) resize(w, h int) {
	m.w, m.h = w, h
	mainH := max(0, h-1)
	treeW := w / 2
	if w >= 100 {
		treeW = max(48, w*45/100)
	}
	rightW := w - treeW
	previewH := mainH * 55 / 100
	m.tree.SetSize(treeW, mainH)
	m.preview.SetSize(rightW, previewH)
	m.panel.SetSize(rightW, mainH-previewH)
	m.status.SetSize(w, 1)
	for _, d := range m.dialogs {
		d.SetSize(m.dialogRoom())
	}
}

// minW and minH are the smallest sizes the layout is drawn for.
const minW, minH = 40, 10

// View composes the panes, the status bar, and the top dialog. It works on a copy of
// the root and changes nothing: what it draws was laid out by Update (layout, SetSize).
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion // clicks and the wheel (mouse.go)
	v.WindowTitle = m.windowTitle()
	return v
}

func (m Model) render() string {
	if m.w == 0 || m.h == 0 {
		return ""
	}
	if m.w < minW || m.h < minH {
		return blankWith(fit(" orcr needs at least 40×10", m.w), m.w, m.h)
	}
	right := m.preview.View() + "\n" + m.panel.View()
	tree := m.tree.View()
	if m.conn == connLost {
		tree = m.dim(tree) // what it shows is the last thing the server said
	}
	out := hjoin(tree, right) + "\n" + m.status.View(m.statusInfo())
	if len(m.dialogs) > 0 {
		out = overlay(out, m.dialogs[len(m.dialogs)-1].View(), m.w)
	}
	return out
}

func blankWith(first string, w, h int) string {
	lines := strings.Split(blank(w, h), "\n")
	if len(lines) > 0 {
		lines[0] = first
	}
	return strings.Join(lines, "\n")
}

// syncPreview points the preview at the selected agent's latest snapshot (Update's
// layout and afterSelection call it).
func (m *Model) syncPreview() {
	m.preview.setAgent(m.tree.selected())
	m.preview.node = m.tree.sel
}
