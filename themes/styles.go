package themes

import "charm.land/lipgloss/v2"

// Styles is everything the dashboard draws with, built from one Palette by Build. Panes
// never create colours of their own; they pick the style named for what they show.
type Styles struct {
	// Palette is the palette these styles were built from.
	Palette Palette

	// Text is body text; Muted secondary columns; Subtle roll-ups and separators.
	Text, Muted, Subtle lipgloss.Style
	// Accent marks titles and the focused pane.
	Accent lipgloss.Style
	// Bold is body text in bold, for names of inner tree nodes.
	Bold lipgloss.Style

	// Border draws the frame of an unfocused pane; BorderFocused of the focused one.
	Border, BorderFocused lipgloss.Style
	// Title is a pane title on its frame; TitleFocused on the focused pane's frame.
	Title, TitleFocused lipgloss.Style

	// Selected is the whole selected row (foreground and background).
	Selected lipgloss.Style

	// State styles colour an agent's state glyph and name by lifecycle group.
	Working, Blocked, Done, Queued, Exited, Lost lipgloss.Style

	// StatusBar is the bottom bar; StatusMode its mode badge; StatusKey key hints in it.
	StatusBar, StatusMode, StatusKey lipgloss.Style

	// KeyName and KeyDesc render help; KeyDestructive marks keys that destroy (kill).
	KeyName, KeyDesc, KeyDestructive lipgloss.Style

	// GaugeOK, GaugeWarn and GaugeDanger fill usage bars by level; GaugeEmpty is the rest.
	GaugeOK, GaugeWarn, GaugeDanger, GaugeEmpty lipgloss.Style

	// Error is an error message; Danger a destructive prompt or key.
	Error, Danger lipgloss.Style

	// DialogBorder frames dialogs; DialogTitle is their title.
	DialogBorder, DialogTitle lipgloss.Style
}

// Build turns a palette into Styles. It is the only place colours become styles.
func Build(p Palette) Styles {
	fg := func(s string) lipgloss.Style { return lipgloss.NewStyle().Foreground(c(s)) }
	return Styles{
		Palette: p,
		Text:    fg(p.Fg),
		Muted:   fg(p.Muted),
		Subtle:  fg(p.Subtle),
		Accent:  fg(p.Accent),
		Bold:    fg(p.Fg).Bold(true),

		Border:        fg(p.Subtle),
		BorderFocused: fg(p.Accent),
		Title:         fg(p.Muted).Bold(true),
		TitleFocused:  fg(p.Accent).Bold(true),

		Selected: lipgloss.NewStyle().Foreground(c(p.SelectionFg)).Background(c(p.SelectionBg)),

		Working: fg(p.Working),
		Blocked: fg(p.Blocked).Bold(true),
		Done:    fg(p.Done),
		Queued:  fg(p.Queued),
		Exited:  fg(p.Exited),
		Lost:    fg(p.Lost),

		StatusBar:  lipgloss.NewStyle().Foreground(c(p.StatusFg)).Background(c(p.StatusBg)),
		StatusMode: lipgloss.NewStyle().Foreground(c(p.StatusBg)).Background(c(p.Accent)).Bold(true),
		StatusKey:  lipgloss.NewStyle().Foreground(c(p.Accent)).Background(c(p.StatusBg)).Bold(true),

		KeyName:        fg(p.Accent).Bold(true),
		KeyDesc:        fg(p.Muted),
		KeyDestructive: fg(p.Danger).Bold(true),

		GaugeOK:     fg(p.OK),
		GaugeWarn:   fg(p.Warn),
		GaugeDanger: fg(p.Danger),
		GaugeEmpty:  fg(p.Subtle),

		Error:  fg(p.Danger),
		Danger: fg(p.Danger).Bold(true),

		DialogBorder: fg(p.Accent),
		DialogTitle:  fg(p.Accent).Bold(true),
	}
}
