package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"0orcr/fast"

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

// printTable prints display rows with aligned columns (fast.WriteTable, which answers
// `orcr agent ls` on the fast path too).
func printTable(w io.Writer, t *wire.Table) { fast.WriteTable(w, t.Columns, t.Rows) }

// printAgent prints `agent get`'s text. The printer is the fast path's (fast.WriteAgent,
// which answers `orcr agent get` before this package is initialised): the agent goes
// to it as the JSON the server sends, so both paths print the same bytes.
func printAgent(w io.Writer, a wire.Agent, explain bool) {
	var fa fast.Agent
	b, err := json.Marshal(a)
	if err == nil {
		err = json.Unmarshal(b, &fa)
	}
	if err != nil {
		fmt.Fprintf(w, "id:  %s\n(cannot print the agent: %v)\n", a.ID, err)
		return
	}
	fast.WriteAgent(w, &fa, explain)
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
