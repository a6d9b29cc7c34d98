/* Tests for curate/extract/wikitext: markup to reader text, and pathological inputs. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"
#include "curate/extract/wikitext.h"

static struct sl_buf out_buf;

static const char *wt(const char *s)
{
    sl_buf_release(&out_buf);
    sl_buf_init(&out_buf, 64 << 20);
    REQUIRE(wikitext_to_text(s, strlen(s), &out_buf) == 0);
    return out_buf.data ? out_buf.data : "";
}

TEST(wikitext_inline)
{
    CHECK_EQ_STR(wt("'''Bold''' and ''italic'' and '''''both'''''"), "Bold and italic and both");
    CHECK_EQ_STR(wt("[[Paris]] and [[Paris, Texas|the other one]]s"), "Paris and the other ones");
    CHECK_EQ_STR(wt("[[tree]]s grow"), "trees grow");
    CHECK_EQ_STR(wt("See [http://example.org the site] or [http://example.org]."),
                 "See the site or.");
    CHECK_EQ_STR(wt("A&amp;B &ndash; &#x263A; &#65;&nbsp;z"), "A&B \xe2\x80\x93 \xe2\x98\xba A z");
    CHECK_EQ_STR(wt("x<ref name=a>a note</ref> y<ref name=b/> z<!-- hidden -->."), "x y z.");
    CHECK_EQ_STR(wt("keep <nowiki>[[not a link]] ''x''</nowiki> literal"),
                 "keep [[not a link]] ''x'' literal");
    CHECK_EQ_STR(wt("a<br/>b<br>c"), "a\nb\nc");
    CHECK_EQ_STR(wt("__NOTOC__Text __TOC__here"), "Text here");
    CHECK_EQ_STR(wt("<span style=\"x\">in span</span> <small>small</small>"), "in span small");
}

TEST(wikitext_templates_and_files)
{
    CHECK_EQ_STR(wt("{{Infobox person\n| name = X\n| born = {{birth date|1900|1|1}}\n}}\n"
                    "'''X''' (born {{circa}} 1900) was."),
                 "X (born 1900) was.");
    CHECK_EQ_STR(wt("It is {{convert|5|km}} long, {{lang|fr|bonjour}}, {{nowrap|a b}}."),
                 "It is 5 km long, bonjour, a b.");
    CHECK_EQ_STR(wt("{{#if: x | yes | no}}Text{{{param|default}}}."), "Text.");
    CHECK_EQ_STR(wt("[[File:X.jpg|thumb|A caption with [[a link]].]]Text "
                    "[[Image:Y.png]][[Category:Things]][[fr:Chose]][[Категория:Вещи]]end"),
                 "Text end");
    CHECK_EQ_STR(wt("[[:Category:Things|things]] and [[wikt:word|word]]"), "things and word");
    CHECK_EQ_STR(wt("A {{IPA|/eɪ/}}, plural"), "A, plural");
}

TEST(wikitext_blocks)
{
    CHECK_EQ_STR(wt("Intro line one\nline two.\n\n== Section ==\nBody.\n=== Empty ===\n"
                    "== Next ==\n* item one\n* item two\n# numbered\n----\nAfter."),
                 "Intro line one line two.\n\nSection\nBody.\n\nNext\nitem one\nitem two\n"
                 "numbered\n\nAfter.");
    CHECK_EQ_STR(wt("Before\n{| class=\"wikitable\"\n|+ Caption\n|-\n! Name !! Value\n|-\n"
                    "| style=\"x\" | alpha || [[One|1]]\n|-\n| beta\n| 2\n|}\nAfter"),
                 "Before\n\nCaption\nName | Value\nalpha | 1\nbeta | 2\n\nAfter");
    CHECK_EQ_STR(wt("== References ==\n<references/>\n== External links ==\n{{Commons}}\n"), "");
}

TEST(wikitext_pathological)
{
    struct sl_buf in = SL_BUF_INIT, out;
    sl_buf_init(&out, 64 << 20);
    /* unbalanced openers are literal text, as MediaWiki shows them */
    CHECK_EQ_STR(wt("a {{ b [[ c"), "a {{ b [[ c");
    CHECK_EQ_STR(wt("a }} b ]] c {{x}}}"), "a }} b ]] c }");
    /* 200k unclosed {{ and [[, then 200k closers */
    for (int i = 0; i < 200000; i++)
        sl_buf_puts(&in, "{{[[");
    sl_buf_puts(&in, "text");
    REQUIRE(wikitext_to_text(in.data, in.len, &out) == 0);
    CHECK_CONTAINS(out.data, "text");
    sl_buf_reset(&in);
    sl_buf_reset(&out);
    for (int i = 0; i < 200000; i++)
        sl_buf_puts(&in, "{{x|");
    for (int i = 0; i < 200000; i++)
        sl_buf_puts(&in, "}}]]");
    REQUIRE(wikitext_to_text(in.data, in.len, &out) == 0);
    /* nested whitelisted templates past the nesting cap */
    sl_buf_reset(&in);
    sl_buf_reset(&out);
    for (int i = 0; i < 10000; i++)
        sl_buf_puts(&in, "{{nowrap|");
    sl_buf_puts(&in, "deep");
    for (int i = 0; i < 10000; i++)
        sl_buf_puts(&in, "}}");
    REQUIRE(wikitext_to_text(in.data, in.len, &out) == 0);
    /* a huge table: 100k rows */
    sl_buf_reset(&in);
    sl_buf_reset(&out);
    sl_buf_puts(&in, "{|\n");
    for (int i = 0; i < 100000; i++)
        sl_buf_printf(&in, "|-\n| r%d || c || [[l|d]]\n", i);
    sl_buf_puts(&in, "|}\n");
    REQUIRE(wikitext_to_text(in.data, in.len, &out) == 0);
    CHECK_CONTAINS(out.data, "r99999 | c | d");
    /* unclosed table, tags, comments */
    sl_buf_reset(&out);
    const char *bad = "{|\n| a\n<ref>never closed <!-- nor this <nowiki> [[x|";
    REQUIRE(wikitext_to_text(bad, strlen(bad), &out) == 0);
    /* the output cap */
    struct sl_buf small;
    sl_buf_init(&small, 16);
    CHECK_EQ_INT(wikitext_to_text("a long enough text to pass the cap", 34, &small), SL_ERR_TOOBIG);
    CHECK(small.len <= 16);
    sl_buf_release(&small);
    sl_buf_release(&in);
    sl_buf_release(&out);
    sl_buf_release(&out_buf);
}
