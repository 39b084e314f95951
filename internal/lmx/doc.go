// Package lmx compiles LMX, the Loops email markup (spec §9), into
// email-client-safe HTML and a plain-text alternative.
//
// It is pure: no I/O, no global mutable state. The pipeline is
//
//	doc, warnings, err := lmx.Parse(src)          // *SyntaxError with line:col on failure
//	tmpl, err := lmx.Compile(doc, lmx.Options{…}) // expand components, apply theme, lay out
//	html, text := tmpl.Render(&values, &fallbacks) // once per recipient
//
// Parse checks the content model of §9.2: unknown tags, misplaced
// elements, missing required attributes and stray text are errors;
// unknown attributes and invalid or out-of-range values are warnings
// (out-of-range numbers are clamped, invalid values ignored). The source
// is XML, but bare '&' characters (common in URLs) and HTML entities
// such as &nbsp; are accepted.
//
// Compile does all the layout work once. The resulting Template holds the
// static HTML and text as byte chunks plus a short list of splice points
// for variables; rendering copies the chunks and escapes each variable
// value into place, so its cost is dominated by memcpy and it makes no
// per-recipient copies of static parts. AppendHTML/AppendText write into
// a caller-owned buffer without allocating.
//
// Output safety: every text and attribute value is HTML-escaped (quotes
// included); URLs in href/src are restricted to http, https, mailto, tel,
// sms and cid (and relative URLs), checked at compile time when the
// scheme is static and at render time when a variable decides it; no
// script, event-handler attribute or user CSS is ever emitted (colours,
// numbers and font names are validated before they reach a style).
//
// Variables are {contact.x}, {event.x}, {data.x} and {system.x} (§9.3).
// A missing value uses the message's fallback (§9.4), then "". Use
// Missing to decide whether a recipient must be skipped instead.
package lmx
