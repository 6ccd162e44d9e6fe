// The pages in Chromium started with --lang=de, ja and ar (its Accept-Language): each page in that
// language (lang, dir, no English heading, no raw message syntax), axe-core clean, screenshots at
// 390 and 1280 px, Arabic mirrored (labels start at the right), the code email in the language
// of the browser that asked, and the picker switching the language for the whole site.
// Prints one JSON line {checks, screenshots} for t/signin_languages_browser.t.
// usage: node languages.mjs BASE_URL OUT_DIR LANG
import { startWalk } from "./walk.mjs";

const [base, outDir, only] = process.argv.slice(2);
const english = { title: "Sign in", subject: "Confirm your address for Acme" };
const expected = {
  de: { title: "Anmelden", account: "Ihr Konto", subject: /^Bestätigen Sie Ihre Adresse für Acme$/ },
  ja: { title: "ログイン", account: "アカウント", subject: /アドレスを確認/ },
  ar: { title: "تسجيل الدخول", account: "حسابك", subject: /أكّد عنوانك/ },
};

for (const [lang, want] of Object.entries(expected).filter(([l]) => l === only)) {
  const walk = await startWalk({ base, outDir, chromiumArgs: [`--lang=${lang}`] });
  const { check, person, axe, shot, text, email } = walk;
  await walk.run(async () => {
    for (const width of [390, 1280]) {
      const { page, context } = await person({ viewport: { width, height: 900 }, locale: lang });
      await page.goto(`${base}/auth/`);
      await page.waitForSelector("#step-email", { state: "visible" });
      const html = await page.evaluate(() => ({ lang: document.documentElement.lang, dir: document.documentElement.dir }));
      check(`${lang} ${width}px: <html lang=${lang}>`, html.lang === lang, JSON.stringify(html));
      check(`${lang} ${width}px: dir ${lang === "ar" ? "rtl" : "ltr"}`, html.dir === (lang === "ar" ? "rtl" : "ltr"), html.dir);
      const title = await text(page, "#title");
      check(`${lang} ${width}px: the heading is "${want.title}"`, title === want.title && title !== english.title, title);
      const body = await page.evaluate(() => document.body.innerText);
      check(`${lang} ${width}px: no raw message syntax on the page`, !/\{[a-z]+[,}]|\{\{|_\}\}/.test(body), body.slice(0, 200));
      await axe(page, `${lang} sign-in page at ${width}px`);
      await shot(page, `languages-${lang}-signin-${width}`);
      if (lang === "ar") {
        // where the heading's and the label's text lie in the card (a block spans the card either way)
        const box = await page.evaluate(() => {
          const main = document.querySelector("main").getBoundingClientRect();
          const textBox = (el) => {
            const range = document.createRange();
            range.selectNodeContents(el);
            return range.getBoundingClientRect();
          };
          const title = textBox(document.getElementById("title"));
          const label = textBox(document.querySelector("label[for=email]"));
          return { right: [main.right - title.right, main.right - label.right], left: [title.left - main.left, label.left - main.left] };
        });
        check(`ar ${width}px: mirrored: the heading and the label start at the right of the card`,
          box.right[0] < box.left[0] && box.right[1] < box.left[1], JSON.stringify(box));
      }
      if (width === 390) {
        // a code asked from this browser comes in its language
        const address = `${lang}-${Date.now()}@example.com`;
        await page.fill("#email", address);
        await page.click("#email-submit");
        await page.waitForSelector("#step-code", { state: "visible" });
        // the heading the page's script writes comes from the language's catalog script
        const codeTitle = await text(page, "#title");
        check(`${lang}: the code step's heading, written by the script, is translated`,
          codeTitle.length > 0 && codeTitle !== "Check your email", codeTitle);
        await axe(page, `${lang} code step`);
        await shot(page, `languages-${lang}-code-390`);
        const m = await email(page, address);
        check(`${lang}: the email's subject is in ${lang}`, m && want.subject.test(m.subject), m && m.subject);
        await page.fill("#code", m.code);
        await page.click("#code-submit");
        await page.waitForURL(`${base}/auth/account`);
        await page.waitForSelector("#account", { state: "visible" });
        check(`${lang}: the account page too`, (await text(page, "#title")) === want.account, await text(page, "#title"));
        await page.waitForFunction(() => document.querySelectorAll("#sessions li").length > 0);
        await axe(page, `${lang} account page`);
        await shot(page, `languages-${lang}-account-390`);
        // the picker: French for the whole site, whatever the browser says
        await Promise.all([page.waitForNavigation(), page.selectOption("#signin-language", "fr")]);
        check(`${lang}: the picker switches to French`, (await text(page, "#title")) === "Votre compte", await text(page, "#title"));
        const cookies = await context.cookies();
        const c = cookies.find((x) => x.name === "svc_lang");
        check(`${lang}: ... kept in svc_lang (a year, SameSite=Lax)`, c && c.value === "fr" && c.sameSite === "Lax" &&
          c.expires - Date.now() / 1000 > 360 * 86400, JSON.stringify(c));
        await page.goto(`${base}/auth/`);
        check(`${lang}: ... on the sign-in page too`, (await page.evaluate(() => document.documentElement.lang)) === "fr");
      }
      await context.close();
    }
  });
}
