// An OpenAI error response: the HTTP status and the error object's fields.
#pragma once

#include <string>

namespace quill::serve {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param; ///< The request field at fault; "" for null.
  std::string code;  ///< A machine-readable reason; "" for null.
};

inline ApiError badRequest(std::string message, std::string param = "", std::string code = "") {
  return {400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

/// {"error":{"message","type","param","code"}}.
std::string errorJson(const ApiError &error);

} // namespace quill::serve
