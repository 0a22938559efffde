import { Html } from './html.js';

export const INBOX_STYLE = new Html(`
:root { font-family: system-ui, sans-serif; color: #1f2328; background: #f6f8fa; }
body { margin: 0 auto; max-width: 1100px; padding: 16px; }
h1 { margin: 0 0 4px; font-size: 22px; }
h2 { font-size: 17px; margin: 0 0 8px; }
h3 { display: inline; font-size: 16px; margin: 0 8px 0 0; overflow-wrap: anywhere; }
code { background: #eaeef2; padding: 1px 4px; border-radius: 4px; font-size: 12px; word-break: break-all; }
.panel { background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: 12px; margin: 12px 0; }
.inline { display: flex; gap: 6px; flex-wrap: wrap; margin: 8px 0; }
input, select, button { font: inherit; padding: 4px 8px; border-radius: 6px; border: 1px solid #d0d7de; }
button { background: #f3f4f6; cursor: pointer; }
button:hover { background: #e5e7eb; }
button.danger { color: #b42318; }
table.bots { border-collapse: collapse; width: 100%; font-size: 13px; }
table.bots td, table.bots th { border-bottom: 1px solid #eaeef2; padding: 4px 6px; text-align: left; }
.badge { font-size: 11px; padding: 1px 6px; border-radius: 10px; color: #fff; }
.badge.telegram { background: #229ed9; }
.badge.max { background: #7b3fe4; }
.person { border-top: 1px solid #d0d7de; padding: 10px 0; }
.person > header { display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }
.person.deactivated { opacity: 0.6; }
.phone { font-family: monospace; }
.ids { color: #656d76; font-size: 12px; }
.chats { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 10px; margin-top: 8px; }
.chat { border: 1px solid #d0d7de; border-radius: 8px; padding: 8px; background: #fbfcfd; }
.chat > header { display: flex; gap: 6px; align-items: center; }
.status { margin-left: auto; font-size: 12px; color: #656d76; }
.chat.blocked .status { color: #b42318; }
.chat.active .status { color: #1a7f37; }
.transcript { list-style: none; padding: 0; margin: 8px 0; max-height: 320px; overflow-y: auto; }
.message { margin: 4px 0; padding: 6px 8px; border-radius: 8px; max-width: 90%; }
.from-bot { background: #fff; border: 1px solid #d0d7de; }
.from-person { background: #dcf3ff; margin-left: auto; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.meta, .hint, .empty { color: #656d76; font-size: 11px; }
.keyboard .row, .reply-keyboard .row { display: flex; gap: 4px; margin-top: 4px; }
.button { flex: 1; text-align: center; padding: 4px; border-radius: 6px; font-size: 13px; text-decoration: none; }
.button.link { background: #e8f2ff; color: #0969da; border: 1px solid #b6d4fe; }
.button.other { background: #eaeef2; color: #57606a; }
.actions { display: flex; gap: 6px; flex-wrap: wrap; }
.send-text { display: flex; gap: 4px; margin-top: 6px; }
.send-text input { flex: 1; }
#notice.bad { color: #b42318; }
.control { font: 10px monospace; color: #b42318; border: 1px solid #f1aeb5; border-radius: 3px; padding: 0 2px; margin: 0 1px; vertical-align: 1px; }
`);
