package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

func exitSuffix(a wire.Agent) string { return core.ExitSuffix(a) }

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func shortID(id string) string { return core.ShortID(id) }

// printTable prints display rows with aligned columns.
func printTable(w io.Writer, t *wire.Table) {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, strings.Join(t.Columns, "\t"))
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func printAgent(w io.Writer, a wire.Agent, explain bool) {
	tw := newTabWriter(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("id", a.ID)
	row("path", a.Path)
	row("state", string(a.State)+exitSuffix(a))
	if a.Blocked != nil {
		b := a.Blocked.Kind + ": " + a.Blocked.Detail
		if a.Blocked.ResetsAt != nil {
			b += " (resets " + a.Blocked.ResetsAt.Format("15:04 MST") + ")"
		}
		row("blocked", b)
		for _, l := range blockedLines(a.Blocked) {
			fmt.Fprintf(tw, "\t%s\n", l)
		}
	}
	if explain {
		row("decided by", a.StateSource)
		row("because", a.StateReason)
		row("since", a.StateAt.Format(time.RFC3339))
	}
	row("provider", a.Provider)
	row("model", a.Model)
	roleRows(tw, a, explain)
	row("identity", a.Identity)
	if !a.Spawn.Empty() {
		row("spawn", a.Spawn.String())
	}
	row("prompt", promptLine(a.Prompt))
	row("parent", strings.TrimSpace(a.ParentPath+" "+a.ParentID))
	row("argv", strings.Join(a.Argv, " "))
	row("cwd", a.Cwd)
	if a.Sandbox != nil {
		row("sandbox", a.Sandbox.Mode)
	}
	row("host", strings.TrimSpace(a.Host+" "+a.PaneID))
	if a.PID > 0 {
		row("pid", fmt.Sprint(a.PID))
	}
	row("tokens", core.FormatTokens(a.Usage))
	row("cost", core.FormatCost(a))
	row("session", a.SessionID)
	row("transcript", a.Transcript)
	row("error", a.Error)
	row("created", a.CreatedAt.Format(time.RFC3339))
	tw.Flush()
}

// promptLine is a prompt on one line of `agent get`: quoted when it holds a newline or
// a tab, cut at 200 characters (--json has it whole).
func promptLine(p string) string {
	if r := []rune(p); len(r) > 200 {
		p = string(r[:200]) + "…"
	}
	if strings.ContainsAny(p, "\n\r\t") {
		p = strconv.Quote(p)
	}
	return p
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func dash(s string) string { return core.Dash(s) }

// tabWriter aligns columns and buffers the output: tabwriter writes cell by cell, and
// unbuffered that is one syscall per cell.
type tabWriter struct {
	*tabwriter.Writer
	bw *bufio.Writer
}

func newTabWriter(w io.Writer) *tabWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &tabWriter{Writer: tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0), bw: bw}
}

// Flush writes out the aligned table.
func (t *tabWriter) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.bw.Flush()
}
