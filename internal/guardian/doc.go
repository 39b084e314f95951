// Package guardian implements the Guardian content checks of an email
// message (spec §12): variables that the email's kind cannot use or that
// lack a fallback, malformed or missing link targets, shortened YouTube
// links, email addresses without mailto:, social icons without links,
// and the required variables of system transactional emails.
//
// It is pure: the caller parses (and expands) the LMX body with package
// lmx and passes it with the message's settings fields and fallback maps:
//
//	doc, _, err := lmx.Parse(msg.LMX)   // 409 if err != nil
//	_ = lmx.Expand(doc, components)      // so component content is checked
//	res := guardian.Check(guardian.Input{Kind: guardian.Campaign, Doc: doc, Subject: msg.Subject, …})
//	json.NewEncoder(w).Encode(res)       // {"errors":[…],"warnings":[…]}
//
// Result encodes exactly as the runEmailMessageGuardian response (§5.10).
// Errors block publishing a transactional email and sending a campaign;
// warnings are advisory. Missing fallbacks are warnings, as in the Loops
// editor, unless Input.StrictFallbacks is set (the API reference example
// lists them under errors).
package guardian
