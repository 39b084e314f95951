// Validates HTML files produced by internal/lmx with html-validate.
// Usage: node validate.mjs file.html...  Prints one line per problem and
// exits 1 if any file has errors. Run `npm ci` in this directory first.
import { readFileSync } from "node:fs";
import { HtmlValidate } from "html-validate";

const htmlvalidate = new HtmlValidate({
  extends: ["html-validate:recommended"],
  rules: {
    // Email HTML needs inline styles and the legacy presentational
    // attributes (width, align, valign, bgcolor, cellpadding, border)
    // that Outlook and old webmail still rely on.
    "no-inline-style": "off",
    "no-deprecated-attr": "off",
    // Layout tables omit <tbody> (optional in HTML) to keep output small.
    "prefer-tbody": "off",
    // <!--[if mso]> wrappers fix the width of the body in Outlook.
    "no-conditional-comment": "off",
    // role="presentation" on layout tables is deliberate.
    "no-redundant-role": "off",
    // The <title> is the subject line: it may be empty in drafts and its
    // length is the author's choice.
    "empty-title": "off",
    "long-title": "off",
    // Long runs of &nbsp; / &zwnj; fill the preheader on purpose.
    "no-raw-characters": "off",
  },
});

let failed = false;
for (const file of process.argv.slice(2)) {
  const report = await htmlvalidate.validateString(readFileSync(file, "utf8"), file);
  for (const result of report.results) {
    for (const m of result.messages) {
      console.log(`${file}:${m.line}:${m.column}: ${m.ruleId}: ${m.message}`);
    }
  }
  if (!report.valid) failed = true;
}
process.exit(failed ? 1 : 0);
