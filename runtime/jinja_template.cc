#include "runtime/jinja_template.h"

#include <exception>
#include <iomanip>
#include <minja/minja.hpp>
#include <sstream>
#include <utility>

namespace kestrel {
namespace {

// minja's messages go on with the template's line and a caret under the place: the first line
// ("... at row 1, column 59:") says what and where.
std::string FirstLine(const char* what) {
  std::string line(what);
  line = line.substr(0, line.find('\n'));
  if (!line.empty() && line.back() == ':') line.pop_back();
  return line;
}

}  // namespace

// minja's parser and renderer alone: its chat-template.hpp also probes every template for tool
// support at load, printing to stderr when a template rejects the probe (Gemma 3's does), and
// rewrites messages for templates without a system role, which Hugging Face does not do.
struct JinjaTemplate::Impl {
  std::shared_ptr<minja::TemplateNode> root;
  std::string bos_token, eos_token;
  std::time_t now = 0;
  std::optional<bool> enable_thinking;
};

JinjaTemplate::JinjaTemplate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JinjaTemplate::~JinjaTemplate() = default;

Status JinjaTemplate::Parse(const std::string& source, const std::string& bos_token,
                            const std::string& eos_token, std::time_t now,
                            std::unique_ptr<JinjaTemplate>* out) {
  try {
    auto impl = std::make_unique<Impl>();
    // Hugging Face's environment: trim_blocks, lstrip_blocks, a final newline dropped.
    minja::Options options;
    options.trim_blocks = true;
    options.lstrip_blocks = true;
    options.keep_trailing_newline = false;
    impl->root = minja::Parser::parse(source, options);
    impl->bos_token = bos_token;
    impl->eos_token = eos_token;
    impl->now = now;
    out->reset(new JinjaTemplate(std::move(impl)));
    return OkStatus();
  } catch (const std::exception& e) {
    return Status::Error("the chat template does not parse: " + FirstLine(e.what()));
  } catch (...) {
    return Status::Error("the chat template does not parse");
  }
}

Status JinjaTemplate::Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                             std::string* out) const {
  try {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const ChatMessage& m : messages) {
      list.push_back({{"role", m.role}, {"content", m.content}});
    }
    auto context = minja::Context::make(minja::Value(nlohmann::ordered_json{
        {"messages", std::move(list)}, {"add_generation_prompt", add_generation_prompt}}));
    if (impl_->enable_thinking) context->set("enable_thinking", *impl_->enable_thinking);
    context->set("bos_token", impl_->bos_token);
    context->set("eos_token", impl_->eos_token);
    const std::time_t now = impl_->now;
    context->set("strftime_now",
                 minja::Value::callable(
                     [now](const std::shared_ptr<minja::Context>&, minja::ArgumentsValue& args) {
                       args.expectArgs("strftime_now", {1, 1}, {0, 0});
                       const std::string format = args.args[0].get<std::string>();
                       std::tm local{};
                       localtime_r(&now, &local);
                       std::ostringstream text;
                       text << std::put_time(&local, format.c_str());
                       return minja::Value(text.str());
                     }));
    *out = impl_->root->render(context);
    return OkStatus();
  } catch (const std::exception& e) {
    return Status::Error("the chat template fails: " + FirstLine(e.what()));
  } catch (...) {
    return Status::Error("the chat template fails");
  }
}

void JinjaTemplate::SetEnableThinking(std::optional<bool> enable_thinking) {
  impl_->enable_thinking = enable_thinking;
}

}  // namespace kestrel
