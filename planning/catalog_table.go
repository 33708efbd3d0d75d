package planning

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// WriteTable prints the catalog as `orcr catalog` shows it (and as the lead's prompt
// embeds it): one row per model with its ratings, context, the highest tier it qualifies
// for and whether it is premium, then the tiers' minimums.
func WriteTable(w io.Writer, c *Catalog) error {
	bw := bufio.NewWriter(w)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tMODEL\tREASON\tCODE\tARCH\tINSTR\tTOOLS\tPLAN\tSPEED\tCONTEXT\tTIER\tPREMIUM")
	for _, m := range c.Models {
		tier := c.Qualifies(m)
		if tier == "" {
			tier = "-"
		}
		premium := "-"
		if m.Premium {
			premium = "premium"
		}
		fmt.Fprintf(tw, "%s\t%s", m.Provider, m.ID)
		for _, v := range m.Ratings.values() {
			fmt.Fprintf(tw, "\t%d", v)
		}
		fmt.Fprintf(tw, "\t%s\t%s\t%s\n", formatContext(m.Context), tier, premium)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "TIER\tMINIMUMS")
	for _, t := range c.Tiers {
		fmt.Fprintf(tw, "%s\t%s\n", t.Name, t)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(bw, "\nRatings are 1 (weak) to 5 (best). A premium model is used only when the plan says `premium: allowed`.")
	return bw.Flush()
}

// formatContext prints a token count the way model pages do: 200k, 1M.
func formatContext(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}
