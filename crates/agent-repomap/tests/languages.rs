//! The chunker and the repo map on real files of each table-driven language
//! (tests/fixtures/lang, from published packages; see its README).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an integration test: its helpers are not #[test] fns, a panic is a test failure"
)]

use agent_lang::chunk::{chunk_source, Chunk, ChunkLimits};
use agent_lang::lang::Lang;
use agent_repomap::tags::{FileTags, Tagger};

fn fixture(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/lang/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap()
}

/// Whitespace-separated words: a stand-in for the embedder's tokenizer.
fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn chunks(lang: Lang, name: &str) -> Vec<Chunk> {
    let limits = ChunkLimits {
        max_tokens: 150,
        min_tokens: 20,
        overlap_lines: 2,
    };
    chunk_source(lang, &fixture(name), limits, &words)
}

fn tags(lang: Lang, name: &str) -> FileTags {
    Tagger::new().tag(lang, &fixture(name))
}

/// `(kind, symbol, start, end)` of each chunk.
fn outline(lang: Lang, name: &str) -> Vec<(String, String, u32, u32)> {
    chunks(lang, name)
        .into_iter()
        .map(|c| (c.kind, c.symbol, c.start_line, c.end_line))
        .collect()
}

fn has_chunk(lang: Lang, name: &str, kind: &str, symbol: &str, lines: (u32, u32)) {
    let all = outline(lang, name);
    assert!(
        all.iter()
            .any(|(k, s, a, b)| k == kind && s == symbol && (*a, *b) == lines),
        "{name}: no {kind} {symbol} at {lines:?} in {all:#?}"
    );
}

/// `(kind, name, line, public, signature)` of a definition.
fn has_def(lang: Lang, file: &str, name: &str, want: (&str, u32, bool, &str), scope: &[&str]) {
    let t = tags(lang, file);
    let d = t
        .defs
        .iter()
        .find(|d| d.name == name && d.line == want.1)
        .unwrap_or_else(|| panic!("{file}: no def {name} at line {}: {:#?}", want.1, t.defs));
    assert_eq!(format!("{:?}", d.kind), want.0, "{d:?}");
    assert_eq!(d.public, want.2, "{d:?}");
    assert_eq!(d.signature, want.3);
    assert_eq!(t.scope_names(d), scope, "{d:?}");
}

#[test]
fn javascript_functions_keep_their_doc_comments() {
    let f = "debounce.js";
    // The JSDoc block (from line 12) goes with the function; too big for one
    // chunk, it is split into overlapping windows.
    has_chunk(Lang::JavaScript, f, "function", "debounce", (12, 27));
    has_chunk(Lang::JavaScript, f, "function", "debounce", (157, 189));
    has_chunk(
        Lang::JavaScript,
        f,
        "const",
        "isObject, FUNC_ERROR_TEXT",
        (1, 6),
    );
    has_def(
        Lang::JavaScript,
        f,
        "debounce",
        (
            "Function",
            66,
            false,
            "function debounce(func, wait, options)",
        ),
        &[],
    );
    let t = tags(Lang::JavaScript, f);
    // Its inner functions are locals, not API.
    assert!(
        !t.defs.iter().any(|d| d.name == "leadingEdge"),
        "{:#?}",
        t.defs
    );
    assert!(t.ref_count("setTimeout") >= 3 && t.ref_count("invokeFunc") >= 3);
}

#[test]
fn typescript_classes_split_into_methods() {
    let f = "Subject.ts";
    has_chunk(Lang::TypeScript, f, "class", "Subject", (10, 17));
    has_chunk(Lang::TypeScript, f, "method", "Subject.next", (60, 72));
    has_chunk(
        Lang::TypeScript,
        f,
        "method",
        "Subject._innerSubscribe",
        (123, 135),
    );
    has_chunk(Lang::TypeScript, f, "class", "AnonymousSubject", (160, 189));
    let class = "class Subject<T> extends Observable<T> implements SubscriptionLike";
    has_def(
        Lang::TypeScript,
        f,
        "Subject",
        ("Class", 17, true, class),
        &[],
    );
    has_def(
        Lang::TypeScript,
        f,
        "next",
        ("Method", 60, true, "next(value: T)"),
        &[class],
    );
    has_def(
        Lang::TypeScript,
        f,
        "_subscribe",
        (
            "Method",
            117,
            true,
            "protected _subscribe(subscriber: Subscriber<T>): Subscription",
        ),
        &[class],
    );
    assert!(tags(Lang::TypeScript, f).ref_count("AnonymousSubject") >= 2);
}

#[test]
fn go_methods_are_named_by_their_receiver() {
    let f = "errors.go";
    has_chunk(Lang::Go, f, "function", "New", (100, 107));
    has_chunk(Lang::Go, f, "method", "fundamental.Format", (127, 141));
    has_chunk(Lang::Go, f, "method", "withMessage.Format", (250, 262));
    has_chunk(Lang::Go, f, "type", "fundamental", (119, 123));
    has_def(
        Lang::Go,
        f,
        "Wrap",
        (
            "Function",
            184,
            true,
            "func Wrap(err error, message string) error",
        ),
        &[],
    );
    has_def(
        Lang::Go,
        f,
        "fundamental",
        ("Type", 120, false, "fundamental struct"),
        &[],
    );
    has_def(
        Lang::Go,
        f,
        "Format",
        (
            "Method",
            127,
            true,
            "func (f *fundamental) Format(s fmt.State, verb rune)",
        ),
        &[],
    );
    assert!(tags(Lang::Go, f).ref_count("withStack") >= 5);
}

#[test]
fn java_members_get_their_class_and_visibility() {
    let f = "RNLocalizeModuleImpl.java";
    has_chunk(Lang::Java, f, "class", "RNLocalizeModuleImpl", (33, 34));
    has_chunk(
        Lang::Java,
        f,
        "method",
        "RNLocalizeModuleImpl.getLocales",
        (186, 221),
    );
    let class = "public class RNLocalizeModuleImpl";
    has_def(
        Lang::Java,
        f,
        "RNLocalizeModuleImpl",
        ("Class", 33, true, class),
        &[],
    );
    has_def(
        Lang::Java,
        f,
        "getMiuiRegionCode",
        (
            "Method",
            130,
            false,
            "private static @NonNull String getMiuiRegionCode()",
        ),
        &[class],
    );
    has_def(
        Lang::Java,
        f,
        "getTimeZone",
        (
            "Method",
            256,
            true,
            "public static @NonNull String getTimeZone()",
        ),
        &[class],
    );
}

#[test]
fn c_functions_macros_and_static_linkage() {
    let f = "_speedups.c";
    has_chunk(Lang::C, f, "function", "escape_unicode_kind1", (91, 115));
    has_chunk(Lang::C, f, "function", "soft_str", (247, 254));
    has_chunk(Lang::C, f, "macro", "GET_DELTA", (20, 34));
    has_def(
        Lang::C,
        f,
        "escape",
        (
            "Function",
            186,
            false,
            "static PyObject* escape(PyObject *self, PyObject *text)",
        ),
        &[],
    );
    has_def(
        Lang::C,
        f,
        "PyInit__speedups",
        (
            "Function",
            313,
            true,
            "PyMODINIT_FUNC PyInit__speedups(void)",
        ),
        &[],
    );
    has_def(
        Lang::C,
        f,
        "GET_DELTA",
        ("Macro", 20, true, "#define GET_DELTA(inp, inp_end, delta)"),
        &[],
    );
    let t = tags(Lang::C, f);
    assert!(t.ref_count("PyUnicode_GET_LENGTH") >= 3, "{:?}", t.refs);
}

#[test]
fn cpp_items_are_found_even_inside_macros_the_grammar_cannot_follow() {
    let f = "functional.hpp";
    // `PYBIND11_NAMESPACE_BEGIN(..)` leaves the parser in error; the
    // structs and methods inside are still chunks of their own.
    has_chunk(Lang::Cpp, f, "struct", "func_wrapper", (50, 58));
    has_chunk(Lang::Cpp, f, "method", "type_caster::load", (69, 101));
    has_chunk(Lang::Cpp, f, "method", "type_caster::cast", (128, 139));
    has_def(
        Lang::Cpp,
        f,
        "load",
        ("Function", 69, true, "bool load(handle src, bool convert)"),
        &[],
    );
    has_def(
        Lang::Cpp,
        f,
        "cast",
        (
            "Function",
            129,
            false,
            "static handle cast(Func &&f_, return_value_policy policy, handle /* parent */)",
        ),
        &[],
    );
    assert!(tags(Lang::Cpp, f).ref_count("func_handle") >= 5);
}

#[test]
fn csharp_namespaces_classes_and_explicit_interface_members() {
    let f = "DecoderGroup.cs";
    let class = "Python.Runtime.Codecs.DecoderGroup";
    has_chunk(Lang::CSharp, f, "class", class, (8, 12));
    has_chunk(
        Lang::CSharp,
        f,
        "method",
        &format!("{class}.TryDecode"),
        (32, 44),
    );
    has_chunk(
        Lang::CSharp,
        f,
        "class",
        "Python.Runtime.Codecs.DecoderGroupExtensions",
        (60, 83),
    );
    let head = "public sealed class DecoderGroup: IPyObjectDecoder, IEnumerable<IPyObjectDecoder>, IDisposable";
    has_def(
        Lang::CSharp,
        f,
        "TryDecode",
        (
            "Method",
            33,
            true,
            "public bool TryDecode<T>(PyObject pyObj, out T? value)",
        ),
        &[head],
    );
    // An explicit interface implementation has no `public`.
    has_def(
        Lang::CSharp,
        f,
        "GetEnumerator",
        (
            "Method",
            48,
            false,
            "IEnumerator IEnumerable.GetEnumerator()",
        ),
        &[head],
    );
}

#[test]
fn ruby_modules_classes_and_singleton_methods_nest() {
    let f = "color.rb";
    has_chunk(Lang::Ruby, f, "method", "Rainbow.Color.build", (7, 38));
    has_chunk(Lang::Ruby, f, "class", "Rainbow.Color.RGB", (100, 127));
    has_def(
        Lang::Ruby,
        f,
        "to_ansi_domain",
        ("Method", 103, true, "def self.to_ansi_domain(value)"),
        &["module Rainbow", "class Color", "class RGB <Indexed"],
    );
    assert!(tags(Lang::Ruby, f).ref_count("color_names") >= 10);
}

#[test]
fn php_traits_and_their_methods() {
    let f = "LoggerTrait.php";
    // `namespace Psr\Log;` names the rest of the file.
    has_chunk(
        Lang::Php,
        f,
        "method",
        "Psr\\Log::LoggerTrait::emergency",
        (15, 26),
    );
    has_chunk(
        Lang::Php,
        f,
        "method",
        "Psr\\Log::LoggerTrait::log",
        (130, 141),
    );
    has_def(
        Lang::Php,
        f,
        "LoggerTrait",
        ("Trait", 13, true, "trait LoggerTrait"),
        &[],
    );
    has_def(
        Lang::Php,
        f,
        "log",
        (
            "Method",
            141,
            true,
            "abstract public function log($level, $message, array $context = array())",
        ),
        &["trait LoggerTrait"],
    );
    assert!(tags(Lang::Php, f).ref_count("log") >= 8);
}

#[test]
fn lua_functions_keep_their_table_path() {
    let f = "state.lua";
    has_chunk(Lang::Lua, f, "function", "state_ops.pop", (20, 33));
    has_chunk(Lang::Lua, f, "function", "create", (187, 208));
    has_def(
        Lang::Lua,
        f,
        "pop",
        ("Function", 20, true, "function state_ops.pop(self)"),
        &[],
    );
}

#[test]
fn kotlin_classes_split_into_functions() {
    let f = "SearchViewFormatter.kt";
    has_chunk(
        Lang::Kotlin,
        f,
        "method",
        "SearchViewFormatter.setTextColor",
        (25, 35),
    );
    has_chunk(
        Lang::Kotlin,
        f,
        "method",
        "SearchViewFormatter.setPlaceholder",
        (62, 71),
    );
    let class = "class SearchViewFormatter(var searchView: SearchView)";
    has_def(
        Lang::Kotlin,
        f,
        "SearchViewFormatter",
        ("Class", 10, true, class),
        &[],
    );
    has_def(
        Lang::Kotlin,
        f,
        "setTintColor",
        ("Method", 37, true, "fun setTintColor(tintColor: Int?)"),
        &[class],
    );
}

#[test]
fn swift_classes_enums_and_their_methods() {
    let f = "HapticsModule.swift";
    has_chunk(Lang::Swift, f, "class", "HapticsModule", (3, 68));
    let class = "public class HapticsModule: Module";
    has_def(
        Lang::Swift,
        f,
        "HapticsModule",
        ("Class", 3, true, class),
        &[],
    );
    has_def(
        Lang::Swift,
        f,
        "toFeedbackStyle",
        (
            "Method",
            53,
            true,
            "func toFeedbackStyle() -> UIImpactFeedbackGenerator.FeedbackStyle",
        ),
        &[class, "enum ImpactStyle: String, EnumArgument"],
    );
    assert!(tags(Lang::Swift, f).ref_count("UIImpactFeedbackGenerator") >= 2);
}

#[test]
fn bash_functions_are_chunks_and_calls_are_references() {
    let f = "n.sh";
    has_chunk(Lang::Bash, f, "function", "set_arch", (166, 176));
    has_chunk(Lang::Bash, f, "function", "install", (758, 804));
    let t = tags(Lang::Bash, f);
    let install = t
        .defs
        .iter()
        .find(|d| d.name == "install")
        .expect("install");
    assert_eq!(install.kind, agent_repomap::tags::DefKind::Function);
    assert!(t.ref_count("abort") >= 10, "{:?}", t.refs);
}

/// Every chunk of every fixture fits the limit and the chunks cover the
/// file's code (no line of a definition is lost).
#[test]
fn chunks_fit_and_cover_every_definition() {
    for (lang, name) in FIXTURES {
        let src = fixture(name);
        let chunks = chunks(lang, name);
        for c in &chunks {
            assert!(words(&c.text) <= 150, "{name}: {c:?}");
        }
        for d in tags(lang, name).defs {
            assert!(
                chunks
                    .iter()
                    .any(|c| c.start_line <= d.line && d.line <= c.end_line),
                "{name}: line {} ({}) is in no chunk",
                d.line,
                d.name
            );
        }
        assert!(!src.is_empty());
    }
}

const FIXTURES: [(Lang, &str); 20] = [
    (Lang::Cpp, "functional.hpp"),
    (Lang::CSharp, "DecoderGroup.cs"),
    (Lang::Ruby, "color.rb"),
    (Lang::Php, "LoggerTrait.php"),
    (Lang::Lua, "state.lua"),
    (Lang::Kotlin, "SearchViewFormatter.kt"),
    (Lang::Swift, "HapticsModule.swift"),
    (Lang::Bash, "n.sh"),
    (Lang::JavaScript, "debounce.js"),
    (Lang::TypeScript, "Subject.ts"),
    (Lang::Go, "errors.go"),
    (Lang::Java, "RNLocalizeModuleImpl.java"),
    (Lang::C, "_speedups.c"),
    (Lang::Cpp, "namespaces/mesh_simplifier.cpp"),
    (Lang::CSharp, "namespaces/NightlyScheduler.cs"),
    (Lang::CSharp, "namespaces/CouponExpiryJob.cs"),
    (Lang::Ruby, "namespaces/coupon_validator.rb"),
    (Lang::Php, "namespaces/InvoiceMailer.php"),
    (Lang::TypeScript, "namespaces/validation.ts"),
    (Lang::Kotlin, "namespaces/OrderRepository.kt"),
];

/// Namespaces and modules are never chunks of their own: what they hold is
/// chunked with the namespace leading its symbol path, in each language's
/// separator (files shaped like the held-out files of issue 30).
mod namespaces {
    use super::*;

    fn no_namespace_chunk(lang: Lang, name: &str, namespace: &str) {
        let all = outline(lang, name);
        assert!(
            !all.iter()
                .any(|(k, s, _, _)| k == "module" || (s == namespace && k != "block")),
            "{name}: a chunk for the namespace itself in {all:#?}"
        );
    }

    #[test]
    fn cpp_namespaces_nested_and_anonymous() {
        let f = "namespaces/mesh_simplifier.cpp";
        has_chunk(
            Lang::Cpp,
            f,
            "method",
            "geo::MeshSimplifier::collapseShortEdgesBelowTolerance",
            (30, 51),
        );
        has_chunk(
            Lang::Cpp,
            f,
            "method",
            "geo::MeshSimplifier::mergeVertices",
            (72, 83),
        );
        // The anonymous namespace adds nothing; a function in a namespace is
        // no method; the namespace's header goes with what comes first inside.
        has_chunk(Lang::Cpp, f, "function", "geo::squaredEdgeLength", (9, 18));
        has_chunk(
            Lang::Cpp,
            f,
            "function",
            "geo::detail::averageEdgeLength",
            (99, 108),
        );
        no_namespace_chunk(Lang::Cpp, f, "geo");
        has_def(
            Lang::Cpp,
            f,
            "collapseShortEdgesBelowTolerance",
            ("Method", 32, true, "int collapseShortEdgesBelowTolerance()"),
            &["class MeshSimplifier"],
        );
    }

    #[test]
    fn csharp_block_and_file_scoped_namespaces() {
        let f = "namespaces/NightlyScheduler.cs";
        has_chunk(
            Lang::CSharp,
            f,
            "method",
            "Shop.Jobs.NightlyScheduler.RunDueJobsAsync",
            (48, 66),
        );
        has_chunk(Lang::CSharp, f, "interface", "Shop.Jobs.IJob", (74, 78));
        no_namespace_chunk(Lang::CSharp, f, "Shop.Jobs");
        // `namespace Shop.Jobs;` names the rest of the file.
        let f = "namespaces/CouponExpiryJob.cs";
        has_chunk(
            Lang::CSharp,
            f,
            "class",
            "Shop.Jobs.CouponExpiryJob",
            (6, 44),
        );
        has_def(
            Lang::CSharp,
            f,
            "RunAsync",
            (
                "Method",
                25,
                true,
                "public async Task RunAsync(CancellationToken cancellationToken)",
            ),
            &["public sealed class CouponExpiryJob : IJob"],
        );
    }

    #[test]
    fn ruby_modules() {
        let f = "namespaces/coupon_validator.rb";
        has_chunk(Lang::Ruby, f, "class", "Checkout.CouponValidator", (5, 53));
        has_chunk(
            Lang::Ruby,
            f,
            "method",
            "Checkout.CodeFormat.normalize",
            (55, 59),
        );
        no_namespace_chunk(Lang::Ruby, f, "Checkout");
        // The module's head in the map stops at its line, before the comment under it.
        has_def(
            Lang::Ruby,
            f,
            "validate",
            ("Method", 21, true, "def validate(code, cart)"),
            &["module Checkout", "class CouponValidator"],
        );
    }

    #[test]
    fn php_namespace_statement() {
        let f = "namespaces/InvoiceMailer.php";
        has_chunk(
            Lang::Php,
            f,
            "method",
            "App\\Billing::InvoiceMailer::sendInvoice",
            (24, 39),
        );
        no_namespace_chunk(Lang::Php, f, "App\\Billing");
    }

    #[test]
    fn typescript_namespaces_and_ambient_modules() {
        let f = "namespaces/validation.ts";
        has_chunk(
            Lang::TypeScript,
            f,
            "class",
            "Validation.ZipCodeValidator",
            (12, 31),
        );
        has_chunk(
            Lang::TypeScript,
            f,
            "function",
            "Validation.validateAddressForm",
            (33, 48),
        );
        has_chunk(
            Lang::TypeScript,
            f,
            "interface",
            "express-serve-static-core.Request",
            (51, 55),
        );
        has_chunk(
            Lang::TypeScript,
            f,
            "function",
            "addressMiddleware",
            (58, 60),
        );
        no_namespace_chunk(Lang::TypeScript, f, "Validation");
    }

    /// Kotlin has no namespace blocks: a `package` line names no chunk (as
    /// in Java); objects and companions are classes of their own.
    #[test]
    fn kotlin_objects_and_companions() {
        let f = "namespaces/OrderRepository.kt";
        has_chunk(
            Lang::Kotlin,
            f,
            "method",
            "OrderRepository.findRecentForCustomer",
            (22, 28),
        );
        has_chunk(
            Lang::Kotlin,
            f,
            "class",
            "OrderRepository.Companion",
            (39, 47),
        );
        has_chunk(Lang::Kotlin, f, "class", "OrderNumbers", (50, 58));
    }

    /// A small file fits one chunk, but the chunk is the class in the
    /// namespace, never the namespace.
    #[test]
    fn a_small_file_is_its_class_not_its_namespace() {
        let limits = ChunkLimits::default();
        for (lang, src, symbol) in [
            (
                Lang::Cpp,
                "namespace geo {\nclass MeshSimplifier {\n  int collapse();\n};\n}\n",
                "geo::MeshSimplifier",
            ),
            (
                Lang::CSharp,
                "namespace Shop.Jobs {\n  class NightlyScheduler {\n    void Start() {}\n  }\n}\n",
                "Shop.Jobs.NightlyScheduler",
            ),
            (
                Lang::Ruby,
                "module Checkout\n  class CouponValidator\n    def validate(code) = code\n  end\nend\n",
                "Checkout.CouponValidator",
            ),
            (
                Lang::Php,
                "<?php\nnamespace App\\Billing {\n  class InvoiceMailer {\n    function send() {}\n  }\n}\n",
                "App\\Billing::InvoiceMailer",
            ),
            (
                Lang::TypeScript,
                "namespace Validation {\n  export class ZipCodeValidator {\n    ok() { return true; }\n  }\n}\n",
                "Validation.ZipCodeValidator",
            ),
        ] {
            let chunks = chunk_source(lang, src, limits, &words);
            assert_eq!(chunks.len(), 1, "{chunks:#?}");
            assert_eq!(chunks[0].symbol, symbol, "{chunks:#?}");
            // (PHP's `<?php` line merges in as a block.)
            assert_ne!(chunks[0].kind, "module", "{chunks:#?}");
            assert_eq!(chunks[0].start_line, 1, "the header goes with the class");
        }
    }
}
