// Sends one Loops-style SMTP submission with nodemailer, the way the Loops
// docs configure it (port 587, STARTTLS required, user "loops", API key as
// password, the JSON payload as the text part).
//
// Env: SMTP_HOST, SMTP_PORT, LOOPS_API_KEY, PAYLOAD (the JSON text),
// AS_HTML=1 to send the payload as the HTML part only.
// Prints one JSON line: {"ok": true, "response": "250 …"} or
// {"ok": false, "responseCode": 550, "response": "550 …"}; exits 0 either way
// unless something other than an SMTP reply went wrong.
import nodemailer from "nodemailer";

const transporter = nodemailer.createTransport({
  host: process.env.SMTP_HOST || "127.0.0.1",
  port: Number(process.env.SMTP_PORT),
  secure: false,
  requireTLS: true,
  tls: { rejectUnauthorized: false },
  auth: { user: "loops", pass: process.env.LOOPS_API_KEY },
});

const payload = process.env.PAYLOAD;
const message = {
  from: "app@example.com",
  to: "ignored@example.com",
  subject: "ignored",
};
if (process.env.AS_HTML === "1") {
  message.html = payload;
} else {
  message.text = payload;
}

try {
  const info = await transporter.sendMail(message);
  console.log(JSON.stringify({ ok: true, response: info.response }));
} catch (err) {
  if (err.responseCode) {
    console.log(JSON.stringify({ ok: false, responseCode: err.responseCode, response: err.response }));
  } else {
    console.error(err);
    process.exit(2);
  }
} finally {
  transporter.close();
}
